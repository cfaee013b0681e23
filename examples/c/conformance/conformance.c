/*
 * conformance.c: an independent C reimplementation of what a reimplementer
 * checks xunds against, built only on abi.h (docs/abi.md written down as C)
 * and the C standard library plus POSIX mmap. It does not include xunds.h.
 *
 *   conformance layout      prints every ABI block and the NDS region map as
 *                           this header lays them out, in the shape of
 *                           `xunds layout --json`
 *   conformance dump PATH   reads a slab file read-only (header rules,
 *                           region map, counter bands, FNV-1a records with
 *                           the retry, docs/abi.md §2) and prints it in the
 *                           shape of `xunds nds dump --json` (docs/abi.md §8.2)
 *
 * tests/c_conformance.rs builds it with -Wall -Wextra -Werror and the address
 * and undefined-behaviour sanitizers and compares both outputs with the
 * xunds commands'. Exit 0 on success, 1 on a slab it refuses (after printing
 * what it found of the header), 2 on a usage error.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"

/* ---- layout ---------------------------------------------------------------- */

struct field {
    const char *name;
    size_t offset;
    size_t size;
};

struct block {
    const char *name;
    size_t size;
    const struct field *fields;
    size_t count;
};

/* A field named by its C member designator (docs/abi.md §8.1: the layout
 * names nested fields by their path, arrays of scalars as one field), or by
 * the name the layout gives it. */
#define F(T, m) {#m, offsetof(T, m), sizeof(((T *)0)->m)}
#define F_AS(name, T, m) {name, offsetof(T, m), sizeof(((T *)0)->m)}
/* One mem-usage element; the layout calls the grid mem_usage in both blocks. */
#define MU(T, p, l, s)                                                        \
    F_AS("mem_usage[" #l "][" #s "].total_size", T, p[l][s].total_size),       \
        F_AS("mem_usage[" #l "][" #s "].chunk_count", T, p[l][s].chunk_count)
#define MU_ROW(T, p, l)                                                                    \
    MU(T, p, l, 0), MU(T, p, l, 1), MU(T, p, l, 2), MU(T, p, l, 3), MU(T, p, l, 4),        \
        MU(T, p, l, 5), MU(T, p, l, 6), MU(T, p, l, 7), MU(T, p, l, 8), MU(T, p, l, 9),    \
        MU(T, p, l, 10), MU(T, p, l, 11)
#define VERSION(T, v) F(T, v.major), F(T, v.minor), F(T, v.build)
#define RESP(T, r)                                                                           \
    F(T, r.status), F(T, r.err_class), F(T, r.nq_errors), F(T, r.nq_records),              \
        F(T, r.ts_start.tv_sec), F(T, r.ts_start.tv_nsec), F(T, r.ts_end.tv_sec),          \
        F(T, r.ts_end.tv_nsec), F(T, r.device_start_ns), F(T, r.device_end_ns),            \
        F(T, r.mac_count), F(T, r.cc_time_ns), F(T, r.num_outputs), F(T, r.device_id),     \
        F(T, r.device_tpb_idx)
/* The response's fields at the top level (infer_resp_t alone). */
#define RESP_TOP(T)                                                                          \
    F(T, status), F(T, err_class), F(T, nq_errors), F(T, nq_records), F(T, ts_start.tv_sec), \
        F(T, ts_start.tv_nsec), F(T, ts_end.tv_sec), F(T, ts_end.tv_nsec),                 \
        F(T, device_start_ns), F(T, device_end_ns), F(T, mac_count), F(T, cc_time_ns),     \
        F(T, num_outputs), F(T, device_id), F(T, device_tpb_idx)

static const struct field f_xu_queue[] = {
    F(xu_queue_t, xu_id),          F(xu_queue_t, buffer),         F(xu_queue_t, capacity),
    F(xu_queue_t, exec_head),      F(xu_queue_t, scheduled_head), F(xu_queue_t, scheduled_tail),
};
static const struct field f_exec_info[] = {
    F(xuq_exec_info_t, seq_id),        F(xuq_exec_info_t, exec_status),
    F(xuq_exec_info_t, mark_comp_efd), F(xuq_exec_info_t, efd_from_pool),
    F(xuq_exec_info_t, exec_info),
};
static const struct field f_seq_id[] = {
    F(seq_id_bytes_t, seq_num),
    F(seq_id_bytes_t, xu_id),
};
static const struct field f_request[] = {
    F(device_exec_request_t, do_model_switch),   F(device_exec_request_t, eng_addresses_lo),
    F(device_exec_request_t, eng_addresses_hi),  F(device_exec_request_t, reload_seq_config),
    F(device_exec_request_t, load_act_dve_tables),
};
static const struct field f_request_buf[] = {
    F_AS("device_exec_request_t", device_exec_request_buf_t, body),
    F(device_exec_request_buf_t, cc_dma_increment),
};
static const struct field f_work_item[] = {
    F(tpb_execution_info_t, type),
    F(tpb_execution_info_t, exec.mod_ref),
    F(tpb_execution_info_t, exec.resources),
    F(tpb_execution_info_t, exec.compute_idx),
    F(tpb_execution_info_t, exec.sync_point_cpu_timestamp),
    RESP(tpb_execution_info_t, exec.resp),
    F(tpb_execution_info_t, exec.wait_event_data),
    F(tpb_execution_info_t, exec.sync_exec),
};
static const struct field f_resp[] = {RESP_TOP(infer_resp_t)};
static const struct field f_m2s[] = {
    F(udma_m2s_desc_t, len_ctrl), F(udma_m2s_desc_t, meta_ctrl), F(udma_m2s_desc_t, buf_ptr)};
static const struct field f_m2s_meta[] = {
    F(udma_m2s_meta_desc_t, len_ctrl), F(udma_m2s_meta_desc_t, meta_ctrl),
    F(udma_m2s_meta_desc_t, meta1), F(udma_m2s_meta_desc_t, meta2)};
static const struct field f_s2m[] = {
    F(udma_s2m_desc_t, len_ctrl), F(udma_s2m_desc_t, buf2_ptr_lo), F(udma_s2m_desc_t, buf1_ptr)};
static const struct field f_nq[] = {
    F(nq_entry_t, exec_id), F(nq_entry_t, engine), F(nq_entry_t, kind),
    F(nq_entry_t, class),   F(nq_entry_t, flags),  F(nq_entry_t, start_cycle),
    F(nq_entry_t, end_cycle),
};
static const struct field f_nds_header[] = {F(nds_header_t, signature), F(nds_header_t, version)};
static const struct field f_model_record[] = {
    F(nds_model_node_data_internal_t, hash),
    F(nds_model_node_data_internal_t, model_id),
    F(nds_model_node_data_internal_t, model_node_id),
    F(nds_model_node_data_internal_t, name),
    F(nds_model_node_data_internal_t, uuid),
    F(nds_model_node_data_internal_t, nc_index),
    F(nds_model_node_data_internal_t, sg_index),
    MU_ROW(nds_model_node_data_internal_t, mem_usage, 0),
    MU_ROW(nds_model_node_data_internal_t, mem_usage, 1),
};
static const struct field f_node_info[] = {
    F(nds_model_node_info_t, model_id), F(nds_model_node_info_t, model_node_id),
    F(nds_model_node_info_t, name),     F(nds_model_node_info_t, uuid),
    F(nds_model_node_info_t, nc_index), F(nds_model_node_info_t, sg_index),
};
static const struct field f_node_mem[] = {
    MU_ROW(nds_model_node_mem_usage_info_t, model_mem_usage, 0),
    MU_ROW(nds_model_node_mem_usage_info_t, model_mem_usage, 1),
};
static const struct field f_mem_usage[] = {
    F(nds_mem_usage_info_t, total_size),
    F(nds_mem_usage_info_t, chunk_count),
};
static const struct field f_process_info[] = {
    F(nds_process_info_internal_t, hash),
    F(nds_process_info_internal_t, framework_type),
    F(nds_process_info_internal_t, tag),
    VERSION(nds_process_info_internal_t, framework_version),
    VERSION(nds_process_info_internal_t, fal_version),
    VERSION(nds_process_info_internal_t, runtime_version),
};
static const struct field f_version[] = {
    F(nds_version_info_t, major), F(nds_version_info_t, minor), F(nds_version_info_t, build)};
static const struct field f_process_info_ext[] = {
    F(nds_process_info_ext_internal_t, hash),
    F(nds_process_info_ext_internal_t, tag),
};

#define BLOCK(name, T, f) {name, sizeof(T), f, sizeof(f) / sizeof(f[0])}

static const struct block blocks[] = {
    BLOCK("xu_queue_t", xu_queue_t, f_xu_queue),
    BLOCK("xuq_exec_info_t", xuq_exec_info_t, f_exec_info),
    BLOCK("seq_id_t", seq_id_t, f_seq_id),
    BLOCK("device_exec_request_t", device_exec_request_t, f_request),
    BLOCK("device_exec_request_buf", device_exec_request_buf_t, f_request_buf),
    BLOCK("tpb_execution_info_t", tpb_execution_info_t, f_work_item),
    BLOCK("infer_resp_t", infer_resp_t, f_resp),
    BLOCK("udma_desc", udma_m2s_desc_t, f_m2s),
    BLOCK("udma_desc (m2s meta)", udma_m2s_meta_desc_t, f_m2s_meta),
    BLOCK("udma_desc (s2m)", udma_s2m_desc_t, f_s2m),
    BLOCK("nq_entry", nq_entry_t, f_nq),
    BLOCK("nds_header", nds_header_t, f_nds_header),
    BLOCK("nds_model_node_data_internal", nds_model_node_data_internal_t, f_model_record),
    BLOCK("nds_model_node_info", nds_model_node_info_t, f_node_info),
    BLOCK("nds_model_node_mem_usage_info", nds_model_node_mem_usage_info_t, f_node_mem),
    BLOCK("nds_mem_usage_info", nds_mem_usage_info_t, f_mem_usage),
    BLOCK("nds_process_info_internal", nds_process_info_internal_t, f_process_info),
    BLOCK("nds_version_info", nds_version_info_t, f_version),
    BLOCK("nds_process_info_ext_internal", nds_process_info_ext_internal_t, f_process_info_ext),
};

static const struct field regions[] = {
    {"header", NDS_HEADER_OFFSET, NDS_HEADER_SIZE},
    {"nd_counters", NDS_ND_COUNTERS_OFFSET, NDS_ND_COUNTERS_SIZE},
    {"nc_counters", NDS_NC_COUNTERS_OFFSET, NDS_NC_COUNTERS_SIZE},
    {"process_info", NDS_PROCESS_INFO_OFFSET, NDS_PROCESS_INFO_SIZE},
    {"model_bitmap", NDS_MODEL_BITMAP_OFFSET, NDS_MODEL_BITMAP_SIZE},
    {"model_records", NDS_MODEL_RECORDS_OFFSET, NDS_MODEL_RECORDS_SIZE},
    {"process_info_ext", NDS_PROCESS_INFO_EXT_OFFSET, NDS_PROCESS_INFO_EXT_SIZE},
    {"ext_pad", NDS_EXT_PAD_OFFSET, NDS_EXT_PAD_SIZE},
    {"ext_nc_counters", NDS_EXT_NC_COUNTERS_OFFSET, NDS_EXT_NC_COUNTERS_SIZE},
    {"ext_nc_data", NDS_EXT_NC_DATA_OFFSET, NDS_EXT_NC_DATA_SIZE},
};

static void print_fields(const struct field *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf("%s{\"name\":\"%s\",\"offset\":%zu,\"size\":%zu}", i ? "," : "", f[i].name,
               f[i].offset, f[i].size);
}

static int layout(void)
{
    printf("{\"blocks\":[");
    for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
        printf("%s{\"name\":\"%s\",\"size\":%zu,\"fields\":[", b ? "," : "", blocks[b].name,
               blocks[b].size);
        print_fields(blocks[b].fields, blocks[b].count);
        printf("]}");
    }
    printf("],\"nds_regions\":[");
    print_fields(regions, sizeof(regions) / sizeof(regions[0]));
    printf("]}\n");
    return 0;
}

/* ---- names (docs/abi.md §2.4, §2.6) ------------------------------------------ */

static const char *const nd_names[] = {
    "RUNTIME_VERSION",        "FRAMEWORK_VERSION",        "FAL_VERSION",
    "FEATURE_BITMAP",         "MIN_NEFF_VERSION",         "MAX_NEFF_VERSION",
    "MEM_USAGE_CODE_HOST",    "MEM_USAGE_TENSORS_HOST",   "MEM_USAGE_CONSTANTS_HOST",
    "MEM_USAGE_SCRATCHPAD_HOST", "MEM_USAGE_MISC_HOST",   "DYNAMIC_SYSFS_METRIC_BITMAP",
    "DEVICE_CLUSTER_ID",      "AGG_NEFF_ID",
};

static const char *const nc_names[] = {
    "TIME_IN_USE", "INFER_COMPLETED", "INFER_COMPLETED_WITH_ERR",
    "INFER_COMPLETED_WITH_NUM_ERR", "INFER_TIMED_OUT", "INFER_INCORRECT_INPUT",
    "INFER_FAILED_TO_QUEUE", "ERR_GENERIC", "ERR_NUMERICAL", "ERR_MODEL", "ERR_TRANSIENT",
    "ERR_HW", "ERR_RT", "LATENCY_DEVICE", "LATENCY_TOTAL", "NC_TIME", "GENERIC_FAIL",
    "ERR_RESOURCE", "ERR_RESOURCE_NC", "ERR_INVALID", "ERR_UNSUPPORTED_NEFF_VERSION",
    "CC_TIME", "MEM_USAGE_CODE_DEVICE", "MEM_USAGE_TENSORS_DEVICE",
    "MEM_USAGE_CONSTANTS_DEVICE", "MEM_USAGE_SCRATCHPAD_DEVICE", "MEM_USAGE_MISC_DEVICE",
    "MODEL_LOAD_COUNT", "INFERENCE_COUNT", "MAC_COUNT", "OOB",
    /* EXT, numbered from 31 */
    "HW_ERR_COLLECTIVES", "HW_ERR_HBM_UE", "HW_ERR_NC_UE", "HW_ERR_DMA_ABORT",
    "ERR_SW_NQ_OVERFLOW", "ERR_SW_SEMAPHORE_ERROR", "ERR_SW_EVENT_ERROR",
    "ERR_SW_PSUM_COLLISION", "ERR_SW_SEQUENCER_FATAL", "HW_ERR_REPAIRABLE_HBM_UE",
};

static const char *const mem_slot_names[NDS_MEM_SLOTS] = {
    "CODE", "TENSORS", "CONSTANTS", "SCRATCHPAD", "MISC", "RESERVED_5", "RESERVED_6",
    "RESERVED_7", "RESERVED_8", "RESERVED_9", "RESERVED_10", "RESERVED_11",
};
static const char *const mem_location_names[NDS_MEM_LOCATIONS] = {"host", "device"};

_Static_assert(sizeof(nd_names) / sizeof(nd_names[0]) == 14, "ND 0..13 named (§2.4)");
_Static_assert(sizeof(nc_names) / sizeof(nc_names[0]) == 41, "NC 0..40 named (§2.4)");

/* A counter's name, or RESERVED_<index> for an unnamed index (§2.4). */
static const char *counter_name(const char *const *names, size_t named, unsigned i, char *buf,
                                size_t len)
{
    if (i < named)
        return names[i];
    snprintf(buf, len, "RESERVED_%u", i);
    return buf;
}

/* ---- JSON strings ---------------------------------------------------------------- */

static void put_escaped(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
}

/* The text of a fixed-size C char array as a JSON string: the bytes up to
 * the first NUL (or all of them), each ill-formed UTF-8 sequence replaced by
 * U+FFFD, one replacement per maximal ill-formed subpart (Unicode §3.9,
 * docs/abi.md §8.2). */
static void put_c_string(const char *field, size_t len)
{
    const unsigned char *s = (const unsigned char *)field;
    size_t n = 0;
    while (n < len && s[n] != 0)
        n++;
    putchar('"');
    size_t i = 0;
    while (i < n) {
        unsigned char b = s[i];
        size_t width;
        unsigned char lo = 0x80, hi = 0xBF;
        if (b < 0x80) {
            put_escaped(&s[i], 1);
            i++;
            continue;
        } else if (b >= 0xC2 && b <= 0xDF) {
            width = 2;
        } else if (b >= 0xE0 && b <= 0xEF) {
            width = 3;
            if (b == 0xE0)
                lo = 0xA0;
            else if (b == 0xED)
                hi = 0x9F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            width = 4;
            if (b == 0xF0)
                lo = 0x90;
            else if (b == 0xF4)
                hi = 0x8F;
        } else {
            fputs("\xEF\xBF\xBD", stdout);
            i++;
            continue;
        }
        size_t j = i + 1;
        int ok = 1;
        for (size_t k = 1; k < width; k++, j++) {
            unsigned char lo_k = k == 1 ? lo : 0x80, hi_k = k == 1 ? hi : 0xBF;
            if (j >= n || s[j] < lo_k || s[j] > hi_k) {
                ok = 0;
                break;
            }
        }
        if (ok)
            fwrite(&s[i], 1, width, stdout);
        else
            fputs("\xEF\xBF\xBD", stdout);
        i = j;
    }
    putchar('"');
}

/* ---- the slab (docs/abi.md §2) -------------------------------------------------- */

struct slab {
    const unsigned char *base;
    size_t len;
};

/* Counters and record words are naturally aligned u64s that another process
 * writes: every load is atomic (§2.4, §2.9). */
static uint64_t load64(const struct slab *s, size_t off, memory_order mo)
{
    return atomic_load_explicit((const _Atomic uint64_t *)(const void *)(s->base + off), mo);
}

static uint32_t load32(const struct slab *s, size_t off, memory_order mo)
{
    return atomic_load_explicit((const _Atomic uint32_t *)(const void *)(s->base + off), mo);
}

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* FNV-1a-32 of a record copy with its hash word (bytes 0..4) taken as zero (§2.8). */
static uint32_t record_hash(const unsigned char *rec, size_t len)
{
    uint32_t h = NDS_FNV_OFFSET_BASIS;
    for (size_t i = 0; i < len; i++) {
        h ^= i < 4 ? 0u : rec[i];
        h *= NDS_FNV_PRIME;
    }
    return h;
}

enum verdict { FRESH, UNPUBLISHED, TORN };
static const char *const verdict_names[] = {"fresh", "unpublished", "torn"};

/* One record read as §2.9 gives it: word 0 (Acquire), hash 0 is unpublished;
 * the body word by word (Relaxed, at the widths the writer stores); an Acquire
 * fence; word 0 again. Fresh only if both loads of word 0 agree and the copy
 * hashes to it. Two attempts 200 us apart; the last one's verdict stands.
 * `out` holds the copy (the stale one when torn). */
static enum verdict read_record(const struct slab *s, size_t off, size_t len, unsigned char *out)
{
    enum verdict v = UNPUBLISHED;
    for (int attempt = 0; attempt < NDS_READ_ATTEMPTS; attempt++) {
        if (attempt > 0)
            sleep_us(NDS_RECORD_RETRY_US);
        uint64_t first = load64(s, off, memory_order_acquire);
        if ((uint32_t)first == 0) {
            v = UNPUBLISHED;
            continue;
        }
        memcpy(out, &first, 8);
        size_t at = 8;
        for (; at + 8 <= len; at += 8) {
            uint64_t w = load64(s, off + at, memory_order_relaxed);
            memcpy(out + at, &w, 8);
        }
        if (at < len) {
            uint32_t w = load32(s, off + at, memory_order_relaxed);
            memcpy(out + at, &w, 4);
        }
        atomic_thread_fence(memory_order_acquire);
        uint64_t second = load64(s, off, memory_order_relaxed);
        if (first != second) {
            v = TORN;
            continue;
        }
        if (record_hash(out, len) == (uint32_t)first)
            return FRESH;
        v = TORN;
    }
    return v;
}

/* §2.5: the u64 element index of NC counter (core, counter). */
static size_t nc_offset(unsigned core, unsigned counter)
{
    return (size_t)NDS_NC_COUNTER_INDEX(core, counter) * 8u;
}

struct snapshot {
    uint64_t nd[NDS_ND_COUNTER_COUNT];
    uint64_t nc[NDS_CORES][NDS_NC_COUNTERS_PER_CORE];
    uint64_t bitmap;
    enum verdict pi_state, pi_ext_state;
    nds_process_info_internal_t pi;
    nds_process_info_ext_internal_t pi_ext;
    unsigned models;
    unsigned slot[NDS_MAX_MODEL_COUNT];
    enum verdict model_state[NDS_MAX_MODEL_COUNT];
    nds_model_node_data_internal_t model[NDS_MAX_MODEL_COUNT];
};

_Static_assert(NDS_READ_ATTEMPTS == 2, "two attempts (§2.8)");

static void take_snapshot(const struct slab *s, struct snapshot *snap)
{
    for (unsigned i = 0; i < NDS_ND_COUNTER_COUNT; i++)
        snap->nd[i] = load64(s, NDS_ND_COUNTER_OFF(i), memory_order_relaxed);
    for (unsigned core = 0; core < NDS_CORES; core++)
        for (unsigned c = 0; c < NDS_NC_COUNTERS_PER_CORE; c++)
            snap->nc[core][c] = load64(s, nc_offset(core, c), memory_order_relaxed);
    snap->bitmap = load64(s, NDS_MODEL_BITMAP_OFFSET, memory_order_relaxed);
    snap->models = 0;
    for (unsigned slot = 0; slot < NDS_MAX_MODEL_COUNT; slot++) {
        size_t off = NDS_MODEL_RECORD_OFF(slot);
        int listed = ((snap->bitmap >> slot) & 1u) != 0 ||
                     (uint32_t)load64(s, off, memory_order_relaxed) != 0;
        if (!listed)
            continue;
        unsigned char buf[NDS_MODEL_RECORD_SIZE];
        unsigned m = snap->models++;
        snap->slot[m] = slot;
        snap->model_state[m] = read_record(s, off, sizeof buf, buf);
        memcpy(&snap->model[m], buf, sizeof buf);
    }
    unsigned char pi[NDS_PROCESS_INFO_SIZE], ext[NDS_PROCESS_INFO_EXT_SIZE];
    snap->pi_state = read_record(s, NDS_PROCESS_INFO_OFFSET, sizeof pi, pi);
    memcpy(&snap->pi, pi, sizeof pi);
    snap->pi_ext_state = read_record(s, NDS_PROCESS_INFO_EXT_OFFSET, sizeof ext, ext);
    memcpy(&snap->pi_ext, ext, sizeof ext);
}

/* ---- dump -------------------------------------------------------------------------- */

static void put_header(uint64_t word)
{
    nds_header_t h;
    memcpy(&h, &word, sizeof h);
    printf("{\"magic_ok\":%s,\"version\":%" PRId32 "}",
           memcmp(h.signature, "nds", 4) == 0 ? "true" : "false", h.version);
}

static void put_version(const char *key, const nds_version_info_t *v)
{
    printf("\"%s\":{\"major\":%u,\"minor\":%u,\"build\":%" PRIu32 "}", key, v->major, v->minor,
           v->build);
}

static void put_counters(const uint64_t *vals, unsigned n, const char *const *names, size_t named)
{
    char buf[32];
    int first = 1;
    putchar('{');
    for (unsigned i = 0; i < n; i++) {
        if (vals[i] == 0)
            continue;
        printf("%s\"%s\":%" PRIu64, first ? "" : ",", counter_name(names, named, i, buf, sizeof buf),
               vals[i]);
        first = 0;
    }
    putchar('}');
}

static void put_model(unsigned slot, enum verdict state, const nds_model_node_data_internal_t *m)
{
    printf("{\"slot\":%u,\"model_id\":%" PRIu32 ",\"model_node_id\":%" PRIu32 ",\"name\":", slot,
           m->model_id, m->model_node_id);
    put_c_string(m->name, sizeof m->name);
    printf(",\"uuid\":\"");
    for (size_t i = 0; i < sizeof m->uuid; i++)
        printf("%02x", m->uuid[i]);
    printf("\",\"nc_index\":%u,\"sg_index\":%u,\"state\":\"%s\",\"mem_usage\":{", m->nc_index,
           m->sg_index, verdict_names[state]);
    for (unsigned l = 0; l < NDS_MEM_LOCATIONS; l++) {
        printf("%s\"%s\":{", l ? "," : "", mem_location_names[l]);
        int first = 1;
        for (unsigned s = 0; s < NDS_MEM_SLOTS; s++) {
            const nds_mem_usage_info_t *u = &m->mem_usage[l][s];
            if (u->total_size == 0 && u->chunk_count == 0)
                continue;
            printf("%s\"%s\":{\"total_size\":%" PRIu64 ",\"chunk_count\":%" PRIu32 "}",
                   first ? "" : ",", mem_slot_names[s], u->total_size, u->chunk_count);
            first = 0;
        }
        putchar('}');
    }
    printf("}}");
}

static void put_snapshot(uint64_t word, const struct snapshot *s)
{
    printf("{\"header\":");
    put_header(word);
    /* An unpublished record shows zeros (§8.2); a torn one its stale copy. */
    nds_process_info_internal_t pi;
    memset(&pi, 0, sizeof pi);
    if (s->pi_state != UNPUBLISHED)
        pi = s->pi;
    printf(",\"process_info\":{\"state\":\"%s\",\"framework_type\":%" PRIu32 ",\"tag\":",
           verdict_names[s->pi_state], pi.framework_type);
    put_c_string(pi.tag, sizeof pi.tag);
    putchar(',');
    put_version("framework_version", &pi.framework_version);
    putchar(',');
    put_version("fal_version", &pi.fal_version);
    putchar(',');
    put_version("runtime_version", &pi.runtime_version);
    printf("},\"process_info_ext\":{\"tag\":");
    if (s->pi_ext_state == FRESH)
        put_c_string(s->pi_ext.tag, sizeof s->pi_ext.tag);
    else
        printf("null");
    printf("},\"nd_counters\":");
    put_counters(s->nd, NDS_ND_COUNTER_COUNT, nd_names, sizeof nd_names / sizeof nd_names[0]);
    printf(",\"cores\":{");
    int first = 1;
    for (unsigned core = 0; core < NDS_CORES; core++) {
        int any = 0;
        for (unsigned c = 0; c < NDS_NC_COUNTERS_PER_CORE; c++)
            any |= s->nc[core][c] != 0;
        if (!any)
            continue;
        printf("%s\"%u\":", first ? "" : ",", core);
        put_counters(s->nc[core], NDS_NC_COUNTERS_PER_CORE, nc_names,
                     sizeof nc_names / sizeof nc_names[0]);
        first = 0;
    }
    printf("},\"models\":[");
    for (unsigned m = 0; m < s->models; m++) {
        if (m)
            putchar(',');
        nds_model_node_data_internal_t rec;
        memset(&rec, 0, sizeof rec);
        if (s->model_state[m] != UNPUBLISHED)
            rec = s->model[m];
        put_model(s->slot[m], s->model_state[m], &rec);
    }
    printf("]}\n");
}

static const char *header_state(uint64_t word)
{
    nds_header_t h;
    memcpy(&h, &word, sizeof h);
    if (word == 0)
        return "not committed (zero)";
    if (memcmp(h.signature, "nds", 4) != 0)
        return "bad magic";
    return "bad version";
}

static int dump(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "conformance dump: %s: %s\n", path, strerror(errno));
        return 1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "conformance dump: %s: not a regular file\n", path);
        close(fd);
        return 1;
    }
    /* §2.1: a mapping shorter than the region map is refused. */
    if ((uintmax_t)st.st_size < NDS_REQUIRED_SIZE) {
        fprintf(stderr, "conformance dump: %s: %jd bytes, shorter than the %u-byte map\n", path,
                (intmax_t)st.st_size, NDS_REQUIRED_SIZE);
        close(fd);
        return 1;
    }
    struct slab s = {NULL, (size_t)st.st_size};
    void *map = mmap(NULL, s.len, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        fprintf(stderr, "conformance dump: %s: mmap: %s\n", path, strerror(errno));
        return 1;
    }
    s.base = map;

    int rc = 0;
    struct snapshot *snap = NULL;
    /* §2.3: the header word, Acquire (partner: the writer's Release commit);
     * not committed: wait 500 us and check once more. */
    uint64_t word = load64(&s, NDS_HEADER_OFFSET, memory_order_acquire);
    uint64_t now = word;
    if (now != NDS_HEADER_PROTO) {
        sleep_us(NDS_HEADER_RETRY_US);
        now = load64(&s, NDS_HEADER_OFFSET, memory_order_acquire);
    }
    if (now != NDS_HEADER_PROTO) {
        printf("{\"header\":");
        put_header(word);
        printf("}\n");
        fprintf(stderr, "conformance dump: %s: header %s\n", path, header_state(now));
        rc = 1;
        goto out;
    }
    snap = malloc(sizeof *snap);
    if (snap == NULL) {
        fprintf(stderr, "conformance dump: out of memory\n");
        rc = 1;
        goto out;
    }
    /* The whole read between two header checks (§2.3 "Release and detach"):
     * committed before, and after an Acquire fence still committed. */
    if (load64(&s, NDS_HEADER_OFFSET, memory_order_acquire) != NDS_HEADER_PROTO) {
        fprintf(stderr, "conformance dump: %s: detached\n", path);
        rc = 1;
        goto out;
    }
    take_snapshot(&s, snap);
    atomic_thread_fence(memory_order_acquire);
    if (load64(&s, NDS_HEADER_OFFSET, memory_order_relaxed) != NDS_HEADER_PROTO) {
        fprintf(stderr, "conformance dump: %s: detached\n", path);
        rc = 1;
        goto out;
    }
    put_snapshot(word, snap);
out:
    free(snap);
    munmap(map, s.len);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "layout") == 0)
        return layout();
    if (argc == 3 && strcmp(argv[1], "dump") == 0)
        return dump(argv[2]);
    fprintf(stderr, "usage: %s layout | %s dump SLAB\n", argv[0], argv[0]);
    return 2;
}
