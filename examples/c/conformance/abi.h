/*
 * abi.h: the XU queue and NDS datastore blocks of libnrt 2.31 as C types,
 * written from docs/abi.md alone (each block cites its section). It does not
 * include xunds.h and takes nothing from xunds' Rust sources: conformance.c
 * prints this header's view of every block and the NDS region map, and
 * tests/c_conformance.rs compares it with `xunds layout --json`, so any
 * disagreement between the page and the implementation is found there.
 *
 * Every offset and size docs/abi.md gives is a _Static_assert below. Needs
 * only <stdint.h>, <stddef.h> and <stdbool.h>; LP64, little-endian (§1.1).
 */
#ifndef XUNDS_CONFORMANCE_ABI_H
#define XUNDS_CONFORMANCE_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* §1.1: integers are little-endian, pointers are 8 bytes (LP64). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ABI is little-endian (docs/abi.md §1.1)"
#endif
_Static_assert(sizeof(void *) == 8, "pointers are 8 bytes (§1.1)");
_Static_assert(sizeof(bool) == 1, "efd_from_pool is a 1-byte bool (§1.3)");
_Static_assert(sizeof(int) == 4, "mark_comp_efd is a 4-byte int (§1.3)");

/* ---- §3 status codes ---------------------------------------------------- */

/* A 4-byte status word (§1.3: the caller's 4-byte NRT_STATUS). */
typedef uint32_t NRT_STATUS;
enum {
    NRT_SUCCESS = 0,
    NRT_FAILURE = 1,
    NRT_INVALID = 2,
    NRT_INVALID_HANDLE = 3,
    NRT_RESOURCE = 4,
    NRT_TIMEOUT = 5,
    NRT_HW_ERROR = 6,
    NRT_QUEUE_FULL = 7,
    NRT_LOAD_NOT_ENOUGH_NC = 9,
    NRT_UNSUPPORTED_NEFF_VERSION = 10,
    NRT_FAIL_HOST_MEM_ALLOC = 11,
    NRT_UNINITIALIZED = 13,
    NRT_CLOSED = 14,
    NRT_QUEUE_EMPTY = 15,
    NRT_EXEC_UNIT_UNRECOVERABLE = 101,
    NRT_EXEC_BAD_INPUT = 1002,
    NRT_EXEC_COMPLETED_WITH_NUM_ERR = 1003,
    NRT_EXEC_COMPLETED_WITH_ERR = 1004,
    NRT_EXEC_NC_BUSY = 1005,
    NRT_EXEC_OOB = 1006,
    NRT_COLL_PENDING = 1100,
    NRT_EXEC_HW_ERR_COLLECTIVES = 1200,
    NRT_EXEC_HW_ERR_HBM_UE = 1201,
    NRT_EXEC_HW_ERR_NC_UE = 1202,
    NRT_EXEC_HW_ERR_DMA_ABORT = 1203,
    NRT_EXEC_SW_NQ_OVERFLOW = 1204,
    NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE = 1205,
    NRT_NETWORK_PROXY_FAILURE = 1206
};

/* ---- §1.4 seq_id_t and xu_id_t ------------------------------------------ */

typedef uint16_t xu_id_t;   /* bits 15..8 vnc_id, 7..4 queue, 3..0 type */
typedef uint64_t seq_id_t;  /* bits 63..48 xu_id, 47..0 seq_num */

#define XU_ID(vnc, queue, type) \
    ((xu_id_t)((((vnc) & 0xFFu) << 8) | (((queue) & 0xFu) << 4) | ((type) & 0xFu)))
#define SEQ_NUM_MASK UINT64_C(0xFFFFFFFFFFFF)
#define SEQ_ID(xu, num) ((seq_id_t)(((uint64_t)(num) & SEQ_NUM_MASK) | ((uint64_t)(xu) << 48)))
#define SEQ_ID_XU(seq) ((xu_id_t)((seq) >> 48))
#define SEQ_ID_NUM(seq) ((uint64_t)(seq) & SEQ_NUM_MASK)
#define SEQ_ID_VNC(seq) ((unsigned)((seq) >> 56))

/* The same 8 bytes as a little-endian host stores them (§1.4: seq_num is
 * bytes 0..6, xu_id bytes 6..8). */
typedef struct seq_id_bytes {
    uint8_t seq_num[6];
    xu_id_t xu_id;
} seq_id_bytes_t;

_Static_assert(sizeof(seq_id_t) == 8, "§1.4");
_Static_assert(sizeof(seq_id_bytes_t) == 8, "§1.4");
_Static_assert(offsetof(seq_id_bytes_t, seq_num) == 0, "§1.4");
_Static_assert(offsetof(seq_id_bytes_t, xu_id) == 6, "§1.4");
_Static_assert(sizeof(xu_id_t) == 2, "§1.4");
_Static_assert(SEQ_ID_VNC(SEQ_ID(XU_ID(0xAB, 1, 2), 5)) == 0xAB, "vNC id in bits 63..56 (§1.4)");
_Static_assert(SEQ_ID(XU_ID(1, 0, 0), 0x1FFFFFFFFFFFFull) == 0x0100FFFFFFFFFFFFull,
               "seq_num keeps 48 bits (§1.4)");

/* ---- §1.7 infer_resp_t (112 bytes) -------------------------------------- */

/* The response's timespec: tv_sec i64, tv_nsec i64 (§1.7). */
typedef struct xu_timespec {
    int64_t tv_sec;
    int64_t tv_nsec;
} xu_timespec_t;

typedef struct infer_resp {
    NRT_STATUS status;
    uint32_t err_class;         /* 0 none, else 1 + error class (0..5) */
    uint32_t nq_errors;
    uint32_t nq_records;
    xu_timespec_t ts_start;
    xu_timespec_t ts_end;
    uint64_t device_start_ns;
    uint64_t device_end_ns;
    uint64_t mac_count;
    uint64_t cc_time_ns;
    uint32_t num_outputs;
    uint8_t reserved0[20];      /* zero on encode, ignored on parse */
    uint16_t device_id;
    uint16_t device_tpb_idx;
    uint8_t reserved1[4];
} infer_resp_t;

_Static_assert(sizeof(infer_resp_t) == 112, "§1.7");
_Static_assert(offsetof(infer_resp_t, status) == 0x00, "§1.7");
_Static_assert(offsetof(infer_resp_t, err_class) == 0x04, "§1.7");
_Static_assert(offsetof(infer_resp_t, nq_errors) == 0x08, "§1.7");
_Static_assert(offsetof(infer_resp_t, nq_records) == 0x0C, "§1.7");
_Static_assert(offsetof(infer_resp_t, ts_start) == 0x10, "§1.7");
_Static_assert(offsetof(infer_resp_t, ts_end) == 0x20, "§1.7");
_Static_assert(offsetof(infer_resp_t, device_start_ns) == 0x30, "§1.7");
_Static_assert(offsetof(infer_resp_t, device_end_ns) == 0x38, "§1.7");
_Static_assert(offsetof(infer_resp_t, mac_count) == 0x40, "§1.7");
_Static_assert(offsetof(infer_resp_t, cc_time_ns) == 0x48, "§1.7");
_Static_assert(offsetof(infer_resp_t, num_outputs) == 0x50, "§1.7");
_Static_assert(offsetof(infer_resp_t, reserved0) == 0x54, "§1.7");
_Static_assert(offsetof(infer_resp_t, device_id) == 0x68, "§1.7");
_Static_assert(offsetof(infer_resp_t, device_tpb_idx) == 0x6A, "§1.7");
_Static_assert(offsetof(infer_resp_t, reserved1) == 0x6C, "§1.7");
_Static_assert(sizeof(xu_timespec_t) == 16, "§1.7");

/* ---- §1.6 tpb_execution_info_t: the work item (208 bytes) --------------- */

enum { TPB_EXEC_TYPE_EXECUTE = 1, TPB_EXEC_TYPE_STOP = 2 }; /* 0 is invalid */

typedef struct tpb_execution_info {
    uint32_t type;
    uint8_t pad0[4];
    union {             /* 200 bytes; the EXECUTE arm is `exec` */
        struct {
            const void *mod_ref;        /* opaque handle */
            const void *resources;      /* opaque handle */
            uint32_t compute_idx;
            uint8_t pad1[4];
            uint64_t sync_point_cpu_timestamp;
            infer_resp_t resp;
            uint8_t wait_event_data[48];    /* opaque bytes */
            const void *sync_exec;      /* opaque handle */
        } exec;
        uint8_t arm_bytes[200];
    };
} tpb_execution_info_t;

_Static_assert(sizeof(tpb_execution_info_t) == 208, "§1.6");
_Static_assert(offsetof(tpb_execution_info_t, type) == 0x00, "§1.6");
_Static_assert(offsetof(tpb_execution_info_t, exec) == 0x08, "§1.6");
_Static_assert(sizeof(((tpb_execution_info_t *)0)->exec) == 200, "§1.6");
_Static_assert(offsetof(tpb_execution_info_t, exec.mod_ref) == 0x08, "§1.6");
_Static_assert(offsetof(tpb_execution_info_t, exec.resources) == 0x10, "§1.6");
_Static_assert(offsetof(tpb_execution_info_t, exec.compute_idx) == 0x18, "§1.6");
_Static_assert(offsetof(tpb_execution_info_t, exec.sync_point_cpu_timestamp) == 0x20, "§1.6");
_Static_assert(offsetof(tpb_execution_info_t, exec.resp) == 0x28, "§1.6, §1.7");
_Static_assert(offsetof(tpb_execution_info_t, exec.resp.ts_start) == 0x38, "§1.7 abs");
_Static_assert(offsetof(tpb_execution_info_t, exec.resp.device_id) == 0x90, "§1.7 abs, D4");
_Static_assert(offsetof(tpb_execution_info_t, exec.resp.device_tpb_idx) == 0x92, "§1.7, D4");
_Static_assert(offsetof(tpb_execution_info_t, exec.wait_event_data) == 0x98, "§1.6, D4");
_Static_assert(offsetof(tpb_execution_info_t, exec.sync_exec) == 0xC8, "§1.6");

/* ---- §1.3 xuq_exec_info_t: the slot (32 bytes) --------------------------- */

typedef struct xuq_exec_info {
    seq_id_t seq_id;
    NRT_STATUS *exec_status;    /* the caller's status word, written by the worker */
    int mark_comp_efd;          /* -1: no waiter */
    bool efd_from_pool;
    uint8_t pad0[3];
    tpb_execution_info_t *exec_info;
} xuq_exec_info_t;

_Static_assert(sizeof(xuq_exec_info_t) == 32, "§1.3");
_Static_assert(offsetof(xuq_exec_info_t, seq_id) == 0x00, "§1.3");
_Static_assert(offsetof(xuq_exec_info_t, exec_status) == 0x08, "§1.3");
_Static_assert(offsetof(xuq_exec_info_t, mark_comp_efd) == 0x10, "§1.3");
_Static_assert(offsetof(xuq_exec_info_t, efd_from_pool) == 0x14, "§1.3");
_Static_assert(offsetof(xuq_exec_info_t, exec_info) == 0x18, "§1.3");

/* ---- §1.2 xu_queue_t: the ring header (256 bytes) ----------------------- */

/* Each cursor on its own 64-byte line; the gaps are padding nobody reads or
 * writes. Cursors start at 1 and stay below 2^48 (§1.2). */
typedef struct xu_queue {
    xu_id_t xu_id;
    uint8_t pad0[6];
    xuq_exec_info_t *buffer;
    uint64_t capacity;
    uint8_t pad1[0x40 - 0x18];
    uint64_t exec_head;         /* worker */
    uint8_t pad2[0x38];
    uint64_t scheduled_head;    /* producer (trigger) */
    uint8_t pad3[0x38];
    uint64_t scheduled_tail;    /* producer (submit) */
    uint8_t pad4[0x38];
} xu_queue_t;

_Static_assert(sizeof(xu_queue_t) == 256, "§1.2");
_Static_assert(offsetof(xu_queue_t, xu_id) == 0x00, "§1.2");
_Static_assert(offsetof(xu_queue_t, buffer) == 0x08, "§1.2");
_Static_assert(offsetof(xu_queue_t, capacity) == 0x10, "§1.2");
_Static_assert(offsetof(xu_queue_t, exec_head) == 0x40, "§1.2");
_Static_assert(offsetof(xu_queue_t, scheduled_head) == 0x80, "§1.2");
_Static_assert(offsetof(xu_queue_t, scheduled_tail) == 0xC0, "§1.2");

#define XU_CURSOR_START 1u
/* "last completed" of §1.8: the seq_id of cursor exec_head - 1. */
#define XU_LAST_COMPLETED(q) SEQ_ID((q)->xu_id, (q)->exec_head - 1u)

/* ---- §1.5 device_exec_request_t (52 bytes) and its buffer (56 bytes) ---- */

enum { XU_ENGINES = 5 }; /* PE, ACT, POOL, DVE, SP (§1.1, D2) */

typedef struct device_exec_request {
    uint32_t do_model_switch;
    uint32_t eng_addresses_lo[XU_ENGINES];
    uint32_t eng_addresses_hi[XU_ENGINES];
    uint32_t reload_seq_config;
    uint32_t load_act_dve_tables;
} device_exec_request_t;

_Static_assert(sizeof(device_exec_request_t) == 52, "§1.5");
_Static_assert(offsetof(device_exec_request_t, do_model_switch) == 0x00, "§1.5");
_Static_assert(offsetof(device_exec_request_t, eng_addresses_lo) == 0x04, "§1.5");
_Static_assert(offsetof(device_exec_request_t, eng_addresses_hi) == 0x18, "§1.5");
_Static_assert(offsetof(device_exec_request_t, reload_seq_config) == 0x2C, "§1.5");
_Static_assert(offsetof(device_exec_request_t, load_act_dve_tables) == 0x30, "§1.5");

/* The request buffer: the body, then the separate cc_dma_increment copy
 * (§1.5, D5; not a field of device_exec_request_t). */
typedef struct device_exec_request_buf {
    device_exec_request_t body;
    uint32_t cc_dma_increment;
} device_exec_request_buf_t;

_Static_assert(sizeof(device_exec_request_buf_t) == 0x38, "§1.5");
_Static_assert(offsetof(device_exec_request_buf_t, body) == 0x00, "§1.5");
_Static_assert(offsetof(device_exec_request_buf_t, cc_dma_increment) == 0x34, "§1.5");

/* ---- §1.11 UDMA descriptors (16 bytes, three views) --------------------- */

typedef struct udma_m2s_desc {
    uint32_t len_ctrl;
    uint32_t meta_ctrl;
    uint64_t buf_ptr;
} udma_m2s_desc_t;

typedef struct udma_m2s_meta_desc {
    uint32_t len_ctrl;
    uint32_t meta_ctrl;
    uint32_t meta1;
    uint32_t meta2;
} udma_m2s_meta_desc_t;

typedef struct udma_s2m_desc {
    uint32_t len_ctrl;
    uint32_t buf2_ptr_lo;
    uint64_t buf1_ptr;
} udma_s2m_desc_t;

typedef union udma_desc {
    _Alignas(16) udma_m2s_desc_t m2s;
    udma_m2s_meta_desc_t m2s_meta;
    udma_s2m_desc_t s2m;
} udma_desc_t;

_Static_assert(sizeof(udma_desc_t) == 16 && _Alignof(udma_desc_t) == 16, "§1.11");
_Static_assert(sizeof(udma_m2s_desc_t) == 16, "§1.11");
_Static_assert(offsetof(udma_m2s_desc_t, len_ctrl) == 0, "§1.11");
_Static_assert(offsetof(udma_m2s_desc_t, meta_ctrl) == 4, "§1.11");
_Static_assert(offsetof(udma_m2s_desc_t, buf_ptr) == 8, "§1.11");
_Static_assert(sizeof(udma_m2s_meta_desc_t) == 16, "§1.11");
_Static_assert(offsetof(udma_m2s_meta_desc_t, len_ctrl) == 0, "§1.11");
_Static_assert(offsetof(udma_m2s_meta_desc_t, meta_ctrl) == 4, "§1.11");
_Static_assert(offsetof(udma_m2s_meta_desc_t, meta1) == 8, "§1.11");
_Static_assert(offsetof(udma_m2s_meta_desc_t, meta2) == 12, "§1.11");
_Static_assert(sizeof(udma_s2m_desc_t) == 16, "§1.11");
_Static_assert(offsetof(udma_s2m_desc_t, len_ctrl) == 0, "§1.11");
_Static_assert(offsetof(udma_s2m_desc_t, buf2_ptr_lo) == 4, "§1.11");
_Static_assert(offsetof(udma_s2m_desc_t, buf1_ptr) == 8, "§1.11");

/* len_ctrl bits (§1.11). */
#define UDMA_LEN_MASK 0xFFFFu
#define UDMA_RING_ID_SHIFT 24
#define UDMA_FIRST (1u << 26)
#define UDMA_LAST (1u << 27)
#define UDMA_INT_EN (1u << 28)
#define UDMA_STRONG_ORDER_WR (1u << 29)
#define UDMA_DMB (1u << 30)
#define UDMA_META_COPY 0x01080003u /* the usual M2S meta_ctrl of a copy */

/* ---- §1.13 nq_entry (16 bytes, ours) ------------------------------------ */

typedef struct nq_entry {
    uint32_t exec_id;
    uint8_t engine;
    uint8_t kind;       /* 1 DONE, 2 ERROR */
    uint8_t class;      /* ERROR: the error class */
    uint8_t flags;      /* bit 0 phase, 3:1 source */
    uint32_t start_cycle;
    uint32_t end_cycle;
} nq_entry_t;

_Static_assert(sizeof(nq_entry_t) == 16, "§1.13");
_Static_assert(offsetof(nq_entry_t, exec_id) == 0x00, "§1.13");
_Static_assert(offsetof(nq_entry_t, engine) == 0x04, "§1.13");
_Static_assert(offsetof(nq_entry_t, kind) == 0x05, "§1.13");
_Static_assert(offsetof(nq_entry_t, class) == 0x06, "§1.13");
_Static_assert(offsetof(nq_entry_t, flags) == 0x07, "§1.13");
_Static_assert(offsetof(nq_entry_t, start_cycle) == 0x08, "§1.13");
_Static_assert(offsetof(nq_entry_t, end_cycle) == 0x0C, "§1.13");

/* ---- §2.1-§2.2 the slab and its region map ------------------------------- */

#define NEURON_DATASTORE_SIZE 262144u
#define NDS_ND_COUNTER_COUNT 31u
#define NDS_NC_COUNTER_COUNT 31u         /* per core, cores 0-3 */
#define NDS_MAX_NEURONCORE_COUNT 4u      /* cores in the first band */
#define NDS_MAX_MODEL_COUNT 64u
#define NDS_EXT_NC_COUNTER_COUNT 64u     /* counters 31..94 of cores 0-3 */
#define NDS_EXT_CORES 12u                /* cores 4-15 */
#define NDS_EXT_CORE_WORDS 96u           /* 95 counters + 1 pad word */
#define NDS_EXT_NC_COUNTER_COUNT_OLD 65u /* only place the EXT section */
#define NDS_EXT_CORE_WORDS_OLD 96u
#define NDS_CORES 16u
#define NDS_NC_COUNTERS_PER_CORE 95u     /* indices 0..94 */

#define NDS_ALIGN(v) ((v) + (-(v) & 63u))

#define NDS_HEADER_OFFSET 0u
#define NDS_HEADER_SIZE 8u
#define NDS_ND_COUNTERS_OFFSET (NDS_HEADER_OFFSET + NDS_HEADER_SIZE)
#define NDS_ND_COUNTERS_SIZE (NDS_ND_COUNTER_COUNT * 8u)
#define NDS_NC_COUNTERS_OFFSET (NDS_ND_COUNTERS_OFFSET + NDS_ND_COUNTERS_SIZE)
#define NDS_NC_COUNTERS_SIZE (NDS_NC_COUNTER_COUNT * NDS_MAX_NEURONCORE_COUNT * 8u)
#define NDS_PROCESS_INFO_OFFSET (NDS_NC_COUNTERS_OFFSET + NDS_NC_COUNTERS_SIZE)
#define NDS_PROCESS_INFO_SIZE 64u
#define NDS_MODEL_BITMAP_OFFSET (NDS_PROCESS_INFO_OFFSET + NDS_PROCESS_INFO_SIZE)
#define NDS_MODEL_BITMAP_SIZE 8u
#define NDS_MODEL_RECORDS_OFFSET (NDS_MODEL_BITMAP_OFFSET + NDS_MODEL_BITMAP_SIZE)
#define NDS_MODEL_RECORD_SIZE 672u
#define NDS_MODEL_RECORDS_SIZE (NDS_MAX_MODEL_COUNT * NDS_MODEL_RECORD_SIZE)
#define NDS_PROCESS_INFO_EXT_OFFSET (NDS_MODEL_RECORDS_OFFSET + NDS_MODEL_RECORDS_SIZE)
#define NDS_PROCESS_INFO_EXT_SIZE 260u
#define NDS_EXT_OFFSET_OLD 44588u
#define NDS_EXT_OFFSET \
    NDS_ALIGN(NDS_EXT_OFFSET_OLD + NDS_EXT_NC_COUNTER_COUNT_OLD * NDS_MAX_NEURONCORE_COUNT * 8u + \
              NDS_EXT_CORE_WORDS_OLD * NDS_EXT_CORES * 8u)
#define NDS_EXT_PAD_OFFSET (NDS_PROCESS_INFO_EXT_OFFSET + NDS_PROCESS_INFO_EXT_SIZE)
#define NDS_EXT_PAD_SIZE (NDS_EXT_OFFSET - NDS_EXT_PAD_OFFSET)
#define NDS_EXT_NC_COUNTERS_OFFSET NDS_EXT_OFFSET
#define NDS_EXT_NC_COUNTERS_SIZE (NDS_EXT_NC_COUNTER_COUNT * NDS_MAX_NEURONCORE_COUNT * 8u)
#define NDS_EXT_NC_DATA_OFFSET NDS_ALIGN(NDS_EXT_NC_COUNTERS_OFFSET + NDS_EXT_NC_COUNTERS_SIZE)
#define NDS_EXT_NC_DATA_SIZE (NDS_EXT_CORE_WORDS * NDS_EXT_CORES * 8u)
#define NDS_REQUIRED_SIZE (NDS_EXT_NC_DATA_OFFSET + NDS_EXT_NC_DATA_SIZE)

_Static_assert(NDS_ND_COUNTERS_OFFSET == 0x8 && NDS_ND_COUNTERS_SIZE == 248, "§2.2");
_Static_assert(NDS_NC_COUNTERS_OFFSET == 0x100 && NDS_NC_COUNTERS_SIZE == 992, "§2.2");
_Static_assert(NDS_PROCESS_INFO_OFFSET == 0x4e0, "§2.2");
_Static_assert(NDS_MODEL_BITMAP_OFFSET == 0x520, "§2.2");
_Static_assert(NDS_MODEL_RECORDS_OFFSET == 0x528 && NDS_MODEL_RECORDS_SIZE == 43008, "§2.2");
_Static_assert(NDS_PROCESS_INFO_EXT_OFFSET == 0xad28, "§2.2");
_Static_assert(NDS_EXT_PAD_OFFSET == 0xae2c && NDS_EXT_PAD_OFFSET == NDS_EXT_OFFSET_OLD, "§2.2");
_Static_assert(NDS_EXT_PAD_SIZE == 11348, "§2.2");
_Static_assert(NDS_EXT_OFFSET == 55936 && NDS_EXT_OFFSET == 0xda80, "§2.2");
_Static_assert(NDS_EXT_NC_COUNTERS_SIZE == 2048, "§2.2");
_Static_assert(NDS_EXT_NC_DATA_OFFSET == 57984 && NDS_EXT_NC_DATA_OFFSET == 0xe280, "§2.2");
_Static_assert(NDS_EXT_NC_DATA_SIZE == 9216, "§2.2");
_Static_assert(NDS_REQUIRED_SIZE == 67200 && NDS_REQUIRED_SIZE == 0x10680, "§2.1");
_Static_assert(NDS_REQUIRED_SIZE <= NEURON_DATASTORE_SIZE, "§2.1");

/* ---- §2.3 the header ----------------------------------------------------- */

typedef struct nds_header {
    char signature[4];  /* "nds\0" */
    int32_t version;    /* 100000 */
} nds_header_t;

_Static_assert(sizeof(nds_header_t) == NDS_HEADER_SIZE, "§2.3");
_Static_assert(offsetof(nds_header_t, signature) == 0, "§2.3");
_Static_assert(offsetof(nds_header_t, version) == 4, "§2.3");

#define NDS_VERSION 100000
/* The committed header as one little-endian u64: bytes 6e 64 73 00 a0 86 01 00 (§2.3, D1). */
#define NDS_HEADER_PROTO UINT64_C(0x000186a00073646e)
_Static_assert(NDS_HEADER_PROTO == ((uint64_t)NDS_VERSION << 32 | 0x0073646eu), "§2.3, D1");

/* ---- §2.4-§2.5 counters -------------------------------------------------- */

/* Byte offset of ND counter i (i <= 30). */
#define NDS_ND_COUNTER_OFF(i) (NDS_ND_COUNTERS_OFFSET + 8u * (unsigned)(i))
/* u64 element index of NC counter (core, counter), counter <= 94, three bands. */
#define NDS_NC_COUNTER_INDEX(core, c)                                          \
    ((core) < 4u ? ((c) < 31u ? 32u + 31u * (core) + (c)                       \
                              : 6992u + 64u * (core) + ((c) - 31u))            \
                 : 7248u + 96u * ((core) - 4u) + (c))

_Static_assert(NDS_NC_COUNTER_INDEX(2u, 1u) * 8u == 0x2f8, "§2.10");
_Static_assert(NDS_NC_COUNTER_INDEX(1u, 32u) * 8u == 0xdc88, "§2.10");
_Static_assert(NDS_NC_COUNTER_INDEX(7u, 29u) * 8u == 0xec68, "§2.10");
_Static_assert(NDS_ND_COUNTER_OFF(3) == 0x20, "§2.10");
_Static_assert(32u * 8u == NDS_NC_COUNTERS_OFFSET && 6992u * 8u == NDS_EXT_NC_COUNTERS_OFFSET &&
                   7248u * 8u == NDS_EXT_NC_DATA_OFFSET,
               "the band bases are the regions' offsets (§2.5)");
_Static_assert(NDS_NC_COUNTER_INDEX(15u, 94u) * 8u + 8u <= NDS_REQUIRED_SIZE, "§2.5");

/* ---- §2.6-§2.7 hashed records -------------------------------------------- */

enum { NDS_MEM_LOCATIONS = 2, NDS_MEM_SLOTS = 12 }; /* HOST, DEVICE; CODE .. MISC, 5..11 */

typedef struct nds_mem_usage_info {
    uint64_t total_size;
    uint32_t chunk_count;
    uint8_t tail_pad[4];
} nds_mem_usage_info_t;

/* The public structs the record is made of (§2.6). */
typedef struct nds_model_node_info {
    uint32_t model_id;
    uint32_t model_node_id;
    char name[256];
    uint8_t uuid[16];
    uint8_t nc_index;
    uint8_t sg_index;
    uint8_t pad0[2];
} nds_model_node_info_t;

/* The public header names the grid model_mem_usage (§2.6). */
typedef struct nds_model_node_mem_usage_info {
    nds_mem_usage_info_t model_mem_usage[NDS_MEM_LOCATIONS][NDS_MEM_SLOTS];
} nds_model_node_mem_usage_info_t;

/* The record with its fields flat, as §2.6's table gives them. */
typedef struct nds_model_node_data_internal {
    uint32_t hash;
    uint32_t model_id;
    uint32_t model_node_id;
    char name[256];
    uint8_t uuid[16];
    uint8_t nc_index;
    uint8_t sg_index;
    uint8_t pad0[2];
    nds_mem_usage_info_t mem_usage[NDS_MEM_LOCATIONS][NDS_MEM_SLOTS];
} nds_model_node_data_internal_t;

_Static_assert(sizeof(nds_mem_usage_info_t) == 16, "§2.6");
_Static_assert(offsetof(nds_mem_usage_info_t, total_size) == 0, "§2.6");
_Static_assert(offsetof(nds_mem_usage_info_t, chunk_count) == 8, "§2.6");
_Static_assert(sizeof(nds_model_node_info_t) == 284, "§2.6");
/* node_info sits at record +4: its offsets are the record's minus 4 (§2.6). */
_Static_assert(offsetof(nds_model_node_info_t, model_id) == 0x004 - 4, "§2.6");
_Static_assert(offsetof(nds_model_node_info_t, model_node_id) == 0x008 - 4, "§2.6");
_Static_assert(offsetof(nds_model_node_info_t, name) == 0x00c - 4, "§2.6");
_Static_assert(offsetof(nds_model_node_info_t, uuid) == 0x10c - 4, "§2.6");
_Static_assert(offsetof(nds_model_node_info_t, nc_index) == 0x11c - 4, "§2.6");
_Static_assert(offsetof(nds_model_node_info_t, sg_index) == 0x11d - 4, "§2.6");
_Static_assert(sizeof(nds_model_node_mem_usage_info_t) == 384, "§2.6");
_Static_assert(sizeof(nds_model_node_data_internal_t) == NDS_MODEL_RECORD_SIZE, "§2.6");
_Static_assert(offsetof(nds_model_node_data_internal_t, hash) == 0x000, "§2.6");
_Static_assert(offsetof(nds_model_node_data_internal_t, model_id) == 0x004, "§2.6");
_Static_assert(offsetof(nds_model_node_data_internal_t, model_node_id) == 0x008, "§2.6");
_Static_assert(offsetof(nds_model_node_data_internal_t, name) == 0x00c, "§2.6");
_Static_assert(offsetof(nds_model_node_data_internal_t, uuid) == 0x10c, "§2.6");
_Static_assert(offsetof(nds_model_node_data_internal_t, nc_index) == 0x11c, "§2.6");
_Static_assert(offsetof(nds_model_node_data_internal_t, sg_index) == 0x11d, "§2.6");
_Static_assert(offsetof(nds_model_node_data_internal_t, pad0) == 0x11e, "§2.6");
_Static_assert(offsetof(nds_model_node_data_internal_t, mem_usage) == 0x120, "§2.6");
_Static_assert(offsetof(nds_model_node_data_internal_t, mem_usage[1][3].chunk_count) == 0x218,
               "§2.10");
/* node_info at +4, mem_usage at +0x120: the flat record is {hash, node_info, mem_usage}. */
_Static_assert(offsetof(nds_model_node_data_internal_t, model_id) + sizeof(nds_model_node_info_t) ==
                   offsetof(nds_model_node_data_internal_t, mem_usage),
               "§2.6");
_Static_assert(offsetof(nds_model_node_info_t, nc_index) + 4 ==
                   offsetof(nds_model_node_data_internal_t, nc_index),
               "§2.6");
_Static_assert(offsetof(nds_model_node_data_internal_t, mem_usage) +
                       sizeof(nds_model_node_mem_usage_info_t) ==
                   NDS_MODEL_RECORD_SIZE,
               "§2.6");
#define NDS_MODEL_RECORD_OFF(slot) (NDS_MODEL_RECORDS_OFFSET + NDS_MODEL_RECORD_SIZE * (unsigned)(slot))
_Static_assert(NDS_MODEL_RECORD_OFF(5) == 0x1248, "§2.10");

typedef struct nds_version_info {
    uint8_t major;
    uint8_t minor;
    uint8_t hole[2];
    uint32_t build;
} nds_version_info_t;

typedef struct nds_process_info_internal {
    uint32_t hash;
    uint32_t framework_type;    /* 4 bytes in 2.31 (D7) */
    char tag[32];
    nds_version_info_t framework_version;
    nds_version_info_t fal_version;
    nds_version_info_t runtime_version;
} nds_process_info_internal_t;

typedef struct nds_process_info_ext_internal {
    uint32_t hash;
    char tag[256];
} nds_process_info_ext_internal_t;

_Static_assert(sizeof(nds_version_info_t) == 8, "§2.7");
_Static_assert(offsetof(nds_version_info_t, major) == 0, "§2.7");
_Static_assert(offsetof(nds_version_info_t, minor) == 1, "§2.7");
_Static_assert(offsetof(nds_version_info_t, build) == 4, "§2.7");
_Static_assert(sizeof(nds_process_info_internal_t) == NDS_PROCESS_INFO_SIZE, "§2.7");
_Static_assert(offsetof(nds_process_info_internal_t, hash) == 0x00, "§2.7");
_Static_assert(offsetof(nds_process_info_internal_t, framework_type) == 0x04, "§2.7, D7");
_Static_assert(offsetof(nds_process_info_internal_t, tag) == 0x08, "§2.7");
_Static_assert(offsetof(nds_process_info_internal_t, framework_version) == 0x28, "§2.7");
_Static_assert(offsetof(nds_process_info_internal_t, fal_version) == 0x30, "§2.7");
_Static_assert(offsetof(nds_process_info_internal_t, runtime_version) == 0x38, "§2.7");
_Static_assert(sizeof(nds_process_info_ext_internal_t) == NDS_PROCESS_INFO_EXT_SIZE, "§2.7");
_Static_assert(offsetof(nds_process_info_ext_internal_t, tag) == 4, "§2.7");
/* The worked example's absolute addresses (§2.10). */
_Static_assert(NDS_PROCESS_INFO_OFFSET + offsetof(nds_process_info_internal_t, framework_type) ==
                   0x4e4,
               "§2.10");
_Static_assert(NDS_PROCESS_INFO_OFFSET + offsetof(nds_process_info_internal_t, tag) == 0x4e8,
               "§2.10");
_Static_assert(NDS_PROCESS_INFO_OFFSET + offsetof(nds_process_info_internal_t, framework_version) ==
                   0x508,
               "§2.10");
_Static_assert(NDS_PROCESS_INFO_OFFSET + offsetof(nds_process_info_internal_t, fal_version) == 0x510,
               "§2.10");
_Static_assert(NDS_PROCESS_INFO_OFFSET + offsetof(nds_process_info_internal_t, runtime_version) ==
                   0x518,
               "§2.10");
_Static_assert(NDS_PROCESS_INFO_EXT_OFFSET + offsetof(nds_process_info_ext_internal_t, tag) == 0xad2c,
               "§2.10");
_Static_assert(NDS_PROCESS_INFO_EXT_OFFSET + NDS_PROCESS_INFO_EXT_SIZE == NDS_EXT_OFFSET_OLD,
               "§2.7");

/* ---- §2.8 the record hash ------------------------------------------------ */

#define NDS_FNV_OFFSET_BASIS 0x811c9dc5u
#define NDS_FNV_PRIME 0x01000193u
/* Record reads: two attempts, 200 us apart; the header check retries once
 * after 500 us (§2.3, §2.8, §2.9). */
#define NDS_READ_ATTEMPTS 2
#define NDS_RECORD_RETRY_US 200
#define NDS_HEADER_RETRY_US 500

#endif /* XUNDS_CONFORMANCE_ABI_H */
