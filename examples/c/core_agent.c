/*
 * core_agent.c: the core section of include/xunds.h in a firmware-like agent.
 *
 * 1. An XU ring in the agent's own (64-byte aligned) memory: a producer
 *    pthread submits and triggers N jobs, each with its own NRT_STATUS word
 *    and a job struct as exec_info; a worker pthread pops them, does the job
 *    and completes it with a status. The producer checks every status word
 *    and result after observing completion (is_completed, and a blocking
 *    wait on the last one).
 * 2. An NDS slab in the agent's memory: counters, a model record and the
 *    process info written through the writer, read back through a reader
 *    over a const pointer.
 * 3. A slab file at argv[1] written through the std writer, for `xunds nds
 *    dump --json` to read (the test checks it).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xunds.h"

#define JOBS 100000u
#define CAPACITY 64u

#define CHECK(call)                                                                  \
    do {                                                                             \
        NRT_STATUS s_ = (call);                                                      \
        if (s_ != NRT_SUCCESS) {                                                     \
            fprintf(stderr, "%s:%d: %s -> %u\n", __FILE__, __LINE__, #call, s_);     \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

typedef struct job {
    uint64_t in, out;
} job_t;

static job_t jobs[JOBS];
static NRT_STATUS statuses[JOBS];
static uint64_t seqs[JOBS];

static xunds_ring_t *ring;
static xunds_producer_t *producer;
static xunds_worker_t *worker;

static void *producer_main(void *arg) {
    (void)arg;
    for (uint32_t i = 0; i < JOBS;) {
        jobs[i].in = i;
        NRT_STATUS s = xunds_producer_submit(producer, &jobs[i], &statuses[i], &seqs[i]);
        if (s == NRT_QUEUE_FULL) continue; /* the worker frees slots */
        CHECK(s);
        uint64_t triggered;
        CHECK(xunds_producer_trigger(producer, &triggered));
        if (triggered != seqs[i]) exit(2);
        i++;
    }
    return NULL;
}

static void *worker_main(void *arg) {
    (void)arg;
    for (uint32_t n = 0; n < JOBS;) {
        uint64_t seq, popped;
        void *info, *taken;
        /* Do the job while the slot still holds it, then complete it: its
         * result and status are visible to whoever observes completion. */
        NRT_STATUS s = xunds_worker_peek(worker, &seq, &info);
        if (s == NRT_QUEUE_EMPTY) continue;
        CHECK(s);
        job_t *j = info;
        j->out = j->in * 3 + 1;
        CHECK(xunds_worker_pop(worker, NRT_SUCCESS, &popped, &taken));
        if (popped != seq || taken != info) exit(3);
        n++;
    }
    return NULL;
}

static int ring_part(void) {
    size_t len = xunds_ring_mem_size(CAPACITY);
    void *mem = aligned_alloc(XUNDS_RING_ALIGN, len);
    if (!mem) return 1;
    /* Wrong sizes and NULLs are refused before anything is written. */
    if (xunds_ring_init(mem, len - 1, 1, CAPACITY, &ring, &producer, &worker) != NRT_INVALID ||
        xunds_ring_init((char *)mem + 8, len, 1, CAPACITY, &ring, &producer, &worker) != NRT_INVALID ||
        xunds_ring_init(mem, len, 1, CAPACITY, NULL, &producer, &worker) != NRT_INVALID ||
        xunds_ring_mem_size(0) != 0) {
        fprintf(stderr, "bad ring arguments were not refused\n");
        return 1;
    }
    CHECK(xunds_ring_init(mem, len, 1, CAPACITY, &ring, &producer, &worker));
    uint64_t n;
    if (xunds_producer_trigger(producer, &n) != NRT_QUEUE_EMPTY ||
        xunds_worker_pop(worker, NRT_SUCCESS, &n, (void **)&n) != NRT_QUEUE_EMPTY ||
        xunds_ring_in_flight(NULL, &n) != NRT_INVALID_HANDLE ||
        xunds_worker_pop((xunds_worker_t *)ring, NRT_SUCCESS, &n, (void **)&n) !=
            NRT_INVALID_HANDLE) {
        fprintf(stderr, "empty ring or foreign handle not refused\n");
        return 1;
    }

    pthread_t pt, wt;
    pthread_create(&pt, NULL, producer_main, NULL);
    pthread_create(&wt, NULL, worker_main, NULL);
    pthread_join(pt, NULL);
    CHECK(xunds_ring_wait(ring, seqs[JOBS - 1], 10000));
    pthread_join(wt, NULL);

    for (uint32_t i = 0; i < JOBS; i++) {
        bool done;
        CHECK(xunds_ring_is_completed(ring, seqs[i], &done));
        if (!done || statuses[i] != NRT_SUCCESS || jobs[i].out != (uint64_t)i * 3 + 1 ||
            seqs[i] != (((uint64_t)1 << 48) | (i + 1))) {
            fprintf(stderr, "job %u: done %d status %u out %llu seq %#llx\n", i, done,
                    statuses[i], (unsigned long long)jobs[i].out,
                    (unsigned long long)seqs[i]);
            return 1;
        }
    }
    uint64_t last;
    CHECK(xunds_ring_last_completed(ring, &last));
    bool done;
    if (last != seqs[JOBS - 1] ||
        xunds_ring_is_completed(ring, (uint64_t)2 << 48, &done) != NRT_INVALID_HANDLE) {
        fprintf(stderr, "last_completed %#llx / foreign seq not refused\n",
                (unsigned long long)last);
        return 1;
    }
    CHECK(xunds_ring_fini(ring));
    free(mem);
    printf("ring ok %u jobs\n", JOBS);
    return 0;
}

static void write_slab(const xunds_nds_writer_t *w) {
    CHECK(xunds_nds_counter_update(w, 2, 0, XUNDS_NDS_ADD, 41));
    CHECK(xunds_nds_counter_update(w, 2, 0, XUNDS_NDS_ADD, 1));
    CHECK(xunds_nds_counter_update(w, XUNDS_ND, 0, XUNDS_NDS_SET, 7));
    xunds_nds_model_record_t m;
    memset(&m, 0, sizeof m);
    m.model_id = 1234;
    m.model_node_id = 5;
    strcpy((char *)m.name, "c-agent-model");
    m.nc_index = 2;
    m.mem_usage[1][0].total_size = 4096;
    m.mem_usage[1][0].chunk_count = 2;
    uint32_t slot;
    CHECK(xunds_nds_model_commit(w, &m, &slot));
    xunds_nds_process_info_t p;
    memset(&p, 0, sizeof p);
    p.framework_type = 3;
    strcpy((char *)p.tag, "core_agent");
    p.runtime_version = (xunds_nds_version_t){.major = 2, .minor = 31, .build = 7};
    CHECK(xunds_nds_process_info_publish(w, &p));
}

static _Alignas(64) uint64_t slab_mem[XUNDS_NDS_SLAB_SIZE / 8];

static int nds_part(const char *path) {
    xunds_nds_writer_t *w;
    CHECK(xunds_nds_writer_init(slab_mem, sizeof slab_mem, &w));
    write_slab(w);
    if (xunds_nds_counter_update(w, 16, 0, XUNDS_NDS_ADD, 1) != NRT_INVALID ||
        xunds_nds_writer_init(slab_mem, sizeof slab_mem, &w) != NRT_INVALID) {
        fprintf(stderr, "bad core / second init not refused\n");
        return 1;
    }
    xunds_nds_reader_t *r;
    CHECK(xunds_nds_reader_attach(slab_mem, sizeof slab_mem, &r));
    uint64_t v, bits;
    CHECK(xunds_nds_read_counter(r, 2, 0, &v));
    CHECK(xunds_nds_read_model_bitmap(r, &bits));
    uint32_t state;
    xunds_nds_model_record_t m;
    CHECK(xunds_nds_read_model(r, 0, &state, &m));
    xunds_nds_process_info_t p;
    uint32_t pstate;
    CHECK(xunds_nds_read_process_info(r, &pstate, &p));
    if (v != 42 || bits != 1 || state != XUNDS_RECORD_FRESH || m.model_id != 1234 ||
        m.hash == 0 || strcmp((char *)m.name, "c-agent-model") != 0 ||
        pstate != XUNDS_RECORD_FRESH || p.runtime_version.minor != 31) {
        fprintf(stderr, "read back: counter %llu bitmap %llu state %u\n",
                (unsigned long long)v, (unsigned long long)bits, state);
        return 1;
    }
    CHECK(xunds_nds_model_delete(w, 0));
    CHECK(xunds_nds_read_model(r, 0, &state, &m));
    if (state != XUNDS_RECORD_UNPUBLISHED) return 1;
    CHECK(xunds_nds_writer_release(w));
    if (xunds_nds_read_counter(r, 2, 0, &v) != NRT_CLOSED) {
        fprintf(stderr, "a released slab still reads\n");
        return 1;
    }
    CHECK(xunds_nds_reader_close(r));

    /* The slab file another process reads; a second writer is refused. */
    CHECK(xunds_nds_create(path, &w));
    xunds_nds_writer_t *second;
    if (xunds_nds_create(path, &second) != NRT_RESOURCE) {
        fprintf(stderr, "a second writer was not refused\n");
        return 1;
    }
    write_slab(w);
    CHECK(xunds_nds_writer_close(w));
    printf("nds ok %s\n", path);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: core_agent SLAB_PATH\n");
        return 2;
    }
    return ring_part() || nds_part(argv[1]);
}
