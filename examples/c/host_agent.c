/*
 * host_agent.c: a host agent over the simulated system (include/xunds.h,
 * sim section). Starts two cores, loads the example MLP, keeps every XU's
 * ring full with non-blocking schedules, learns of completions from one
 * eventfd per XU (each handle armed on it), collects every result and checks
 * it against the model's reference outputs. Prints "ok N executions" and
 * the rate; exits non-zero on any mismatch.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "xunds.h"

#define CORES 2
#define TOTAL 10000
#define WINDOW 32

#define CHECK(call)                                                                  \
    do {                                                                             \
        NRT_STATUS s_ = (call);                                                      \
        if (s_ != NRT_SUCCESS) {                                                     \
            const char *n_ = xunds_status_name(s_);                                  \
            fprintf(stderr, "%s:%d: %s -> %s (%u)\n", __FILE__, __LINE__, #call,     \
                    n_ ? n_ : "?", s_);                                              \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

int main(void) {
    xunds_system_config_t cfg = {.struct_size = sizeof cfg, .cores = CORES,
                                 .ring_capacity = WINDOW, .wait_spin_us = 0};
    xunds_system_t *sys;
    CHECK(xunds_system_start(&cfg, &sys));
    xunds_mlp_spec_t spec;
    CHECK(xunds_mlp_example(&spec));
    xunds_model_t *model;
    CHECK(xunds_system_load_mlp(sys, &spec, "mlp", &model));
    size_t in_len, out_len;
    CHECK(xunds_model_lens(model, &in_len, &out_len));

    float *input = malloc(in_len * sizeof(float));
    float *want = malloc(out_len * sizeof(float));
    float *got = malloc(out_len * sizeof(float));
    for (size_t i = 0; i < in_len; i++) input[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    CHECK(xunds_model_reference(model, input, in_len, want, out_len));

    /* Per XU: its eventfd and the handles in flight, oldest first. */
    int efd[CORES];
    uint64_t inflight[CORES][WINDOW];
    size_t head[CORES] = {0}, count[CORES] = {0};
    for (int x = 0; x < CORES; x++) {
        efd[x] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd[x] < 0) return perror("eventfd"), 1;
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned scheduled = 0, done = 0, full = 0;
    while (done < TOTAL) {
        /* Fill every ring until it says full (never blocks). */
        for (int x = 0; x < CORES && scheduled < TOTAL; x++) {
            while (scheduled < TOTAL && count[x] < WINDOW) {
                uint64_t seq;
                NRT_STATUS s = xunds_system_schedule(sys, (uint32_t)x, model, input, in_len, &seq);
                if (s == NRT_QUEUE_FULL) { full++; break; }
                CHECK(s);
                bool already;
                CHECK(xunds_system_arm(sys, seq, efd[x], &already));
                inflight[x][(head[x] + count[x]) % WINDOW] = seq;
                count[x]++;
                scheduled++;
            }
        }
        /* Sleep until some XU signals a completion. */
        struct pollfd p[CORES];
        for (int x = 0; x < CORES; x++) p[x] = (struct pollfd){.fd = efd[x], .events = POLLIN};
        if (poll(p, CORES, 5000) <= 0) { fprintf(stderr, "no completion in 5 s\n"); return 1; }
        for (int x = 0; x < CORES; x++) {
            uint64_t n;
            if (read(efd[x], &n, sizeof n) < 0) { /* nothing signalled on this one */ }
            /* Collect the completed prefix of this XU's handles. */
            while (count[x] > 0) {
                uint64_t seq = inflight[x][head[x]];
                NRT_STATUS st;
                xunds_infer_resp_t resp;
                NRT_STATUS s = xunds_system_collect(sys, seq, &st, got, out_len, &resp);
                if (s == NRT_TIMEOUT) break;
                CHECK(s);
                if (st != NRT_SUCCESS || resp.status != NRT_SUCCESS || resp.mac_count == 0 ||
                    memcmp(got, want, out_len * sizeof(float)) != 0) {
                    fprintf(stderr, "seq %#llx: status %u, mac_count %llu, outputs %s\n",
                            (unsigned long long)seq, st, (unsigned long long)resp.mac_count,
                            memcmp(got, want, out_len * sizeof(float)) ? "differ" : "match");
                    return 1;
                }
                head[x] = (head[x] + 1) % WINDOW;
                count[x]--;
                done++;
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

    /* One blocking execution with its typed response. */
    NRT_STATUS st;
    xunds_infer_resp_t resp;
    CHECK(xunds_system_execute(sys, 0, model, input, in_len, got, out_len, 10000, &st, &resp));
    if (st != NRT_SUCCESS || memcmp(got, want, out_len * sizeof(float)) != 0) {
        fprintf(stderr, "execute: status %u\n", st);
        return 1;
    }
    /* Errors are status values: a bad XU, a NULL handle. */
    uint64_t seq;
    if (xunds_system_schedule(sys, 99, model, input, in_len, &seq) != NRT_INVALID ||
        xunds_system_schedule(NULL, 0, model, input, in_len, &seq) != NRT_INVALID_HANDLE) {
        fprintf(stderr, "bad arguments were not refused\n");
        return 1;
    }

    CHECK(xunds_system_unload(sys, model));
    uint64_t executed;
    CHECK(xunds_system_stop(sys, &executed));
    for (int x = 0; x < CORES; x++) close(efd[x]);
    free(input), free(want), free(got);
    printf("ok %u executions (%llu on the device, %u queue-full retries)\n", done,
           (unsigned long long)executed, full);
    printf("exec/s %.0f\n", done / secs);
    return executed == TOTAL + 1 ? 0 : 1;
}
