/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tessera.c - a QEMU user-mode TCG plugin that streams a program's memory
 * accesses to Tessera in binary.
 *
 * Copyright (C) the Tessera authors.
 *
 * This program is free software; you can redistribute it and/or modify it
 * under the terms of the GNU General Public License as published by the Free
 * Software Foundation; either version 2 of the License, or (at your option)
 * any later version. See LICENSE in this directory.
 *
 * It is GPL because it is compiled against QEMU's qemu-plugin.h, which is
 * GPL-2.0-or-later. Tessera itself never links it: Tessera builds it with gcc
 * into a shared object, QEMU loads it, and Tessera only reads the bytes it
 * writes to a pipe (see README.md in this directory).
 *
 * Usage:  qemu-x86_64 -plugin libtessera.so,fd=N[,ifetch=on] PROGRAM ARGS...
 *   fd=N       file descriptor to write to (inherited, normally a pipe);
 *              the plugin moves it out of the guest's way (F_DUPFD_CLOEXEC)
 *   ifetch=on  also emit an instruction-fetch record before each instruction
 *   (the argument name "file" is reserved by QEMU for the plugin path)
 *
 * Stream (all little-endian; the host is little-endian):
 *   header  8 bytes "TESSQEMU", u32 version = 1, u32 record length = 16
 *   record  u64 vaddr, u32 ins_gap, u16 asid (0), u8 kind, u8 size
 *           kind 0 load, 1 store, 2 instruction fetch: the layout of a
 *           Tessera native trace record (docs/trace-format.md §1.3)
 *   end     one record with kind 255: vaddr = instructions executed in
 *           total, ins_gap = 0, size = 0; written at exit, after all data
 *
 * Instruction counting: without ifetch, each translation block adds its
 * instruction count when it starts executing (an exec callback), and each
 * memory callback knows how many instructions of its block come after its
 * instruction (its userdata), so the position of the accessing instruction
 * is exact whenever the block runs to its end. ins_gap of an access is the
 * number of instructions since the previous access of the same vCPU, up to
 * and including its own instruction; later accesses of the same instruction
 * have gap 0 (Tessera's convention, crates/tessera-core/src/access.rs).
 *
 * Threads: each guest thread is a vCPU with its own counters and buffer;
 * a buffer goes to the pipe whole, under a lock, so records of different
 * threads interleave in chunks of up to BUF_RECORDS. A forked child stops
 * recording (only the traced process's accesses reach the pipe).
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define STREAM_VERSION 1u
#define RECORD_LEN 16u
/* Records per vCPU buffer: 64 KiB, a few pipe-fulls per write. */
#define BUF_RECORDS 4096u
/* vCPU indexes in user mode grow with each guest thread created. */
#define MAX_VCPUS 65536u
#define KIND_LOAD 0u
#define KIND_STORE 1u
#define KIND_IFETCH 2u
#define KIND_END 255u

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the stream is written in host byte order: little-endian only");

struct record {
    uint64_t vaddr;
    uint32_t gap;
    uint16_t asid;
    uint8_t kind;
    uint8_t size;
};
_Static_assert(sizeof(struct record) == RECORD_LEN, "record layout");

struct vcpu {
    uint64_t icount; /* instructions started (whole blocks) */
    uint64_t last;   /* position of the instruction of the last access */
    uint32_t n;      /* records in buf */
    struct record buf[BUF_RECORDS];
};

static struct vcpu *vcpus[MAX_VCPUS];
static int out_fd = -1;
static bool ifetch;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what)
{
    fprintf(stderr, "tessera qemu plugin: %s\n", what);
    _exit(70);
}

/* Write all of buf; on error give up the whole run (the reader is gone). */
static void write_all(const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0 && out_fd >= 0) {
        ssize_t k = write(out_fd, p, len);
        if (k < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EPIPE) {
                /* Tessera stopped reading (e.g. --max-accesses): stop quietly. */
                _exit(0);
            }
            fail(strerror(errno));
        }
        p += k;
        len -= (size_t)k;
    }
}

static void flush(struct vcpu *v)
{
    pthread_mutex_lock(&out_lock);
    write_all(v->buf, (size_t)v->n * RECORD_LEN);
    pthread_mutex_unlock(&out_lock);
    v->n = 0;
}

static inline void push(struct vcpu *v, uint64_t vaddr, uint32_t gap,
                        uint8_t kind, uint8_t size)
{
    struct record *r = &v->buf[v->n];
    r->vaddr = vaddr;
    r->gap = gap;
    r->asid = 0;
    r->kind = kind;
    r->size = size;
    if (++v->n == BUF_RECORDS) {
        flush(v);
    }
}

static void vcpu_init(qemu_plugin_id_t id, unsigned int idx);

static inline struct vcpu *get_vcpu(unsigned int idx)
{
    struct vcpu *v = idx < MAX_VCPUS ? vcpus[idx] : NULL;
    if (__builtin_expect(v == NULL, 0)) {
        /* Only the vCPU's own thread uses its slot: no race here. */
        vcpu_init(0, idx);
        v = vcpus[idx];
    }
    return v;
}

static void vcpu_init(qemu_plugin_id_t id, unsigned int idx)
{
    if (idx >= MAX_VCPUS) {
        fail("too many guest threads");
    }
    if (vcpus[idx] == NULL) {
        vcpus[idx] = calloc(1, sizeof(struct vcpu));
        if (vcpus[idx] == NULL) {
            fail("out of memory");
        }
    }
}

/* Without ifetch: a block starts, count all its instructions. */
static void tb_exec(unsigned int idx, void *udata)
{
    get_vcpu(idx)->icount += (uintptr_t)udata;
}

/* With ifetch: one instruction starts; udata = vaddr | size << 56. */
static void insn_exec(unsigned int idx, void *udata)
{
    struct vcpu *v = get_vcpu(idx);
    uint64_t u = (uintptr_t)udata;
    v->icount++;
    v->last = v->icount;
    push(v, u & ((UINT64_C(1) << 56) - 1), 1, KIND_IFETCH, (uint8_t)(u >> 56));
}

/* udata = instructions of the block after this one (0 with ifetch). */
static void mem_access(unsigned int idx, qemu_plugin_meminfo_t info,
                       uint64_t vaddr, void *udata)
{
    struct vcpu *v = get_vcpu(idx);
    uint64_t pos = v->icount - (uintptr_t)udata;
    uint64_t gap = pos - v->last;
    v->last = pos;
    push(v, vaddr, gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap,
         qemu_plugin_mem_is_store(info) ? KIND_STORE : KIND_LOAD,
         (uint8_t)(1u << qemu_plugin_mem_size_shift(info)));
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    if (!ifetch) {
        qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
                                             (void *)(uintptr_t)n);
    }
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        if (ifetch) {
            uint64_t va = qemu_plugin_insn_vaddr(insn);
            uint64_t sz = qemu_plugin_insn_size(insn);
            qemu_plugin_register_vcpu_insn_exec_cb(
                insn, insn_exec, QEMU_PLUGIN_CB_NO_REGS,
                (void *)(uintptr_t)((va & ((UINT64_C(1) << 56) - 1)) | (sz << 56)));
        }
        qemu_plugin_register_vcpu_mem_cb(
            insn, mem_access, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
            (void *)(uintptr_t)(ifetch ? 0 : n - i - 1));
    }
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    uint64_t total = 0;
    if (out_fd < 0) {
        return;
    }
    for (unsigned int i = 0; i < MAX_VCPUS; i++) {
        if (vcpus[i] != NULL) {
            flush(vcpus[i]);
            total += vcpus[i]->icount;
        }
    }
    struct record end = {total, 0, 0, KIND_END, 0};
    pthread_mutex_lock(&out_lock);
    write_all(&end, sizeof end);
    close(out_fd);
    out_fd = -1;
    pthread_mutex_unlock(&out_lock);
}

/* A forked guest child must not write into the parent's stream. */
static void in_fork_child(void)
{
    out_fd = -1;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
                                           const qemu_info_t *info, int argc,
                                           char **argv)
{
    long fd = -1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "fd=", 3) == 0) {
            char *end;
            fd = strtol(a + 3, &end, 10);
            if (*end != '\0' || fd < 0) {
                fprintf(stderr, "tessera qemu plugin: bad fd argument '%s'\n", a);
                return -1;
            }
        } else if (strcmp(a, "ifetch=on") == 0) {
            ifetch = true;
        } else if (strcmp(a, "ifetch=off") == 0) {
            ifetch = false;
        } else {
            fprintf(stderr, "tessera qemu plugin: unknown argument '%s' "
                    "(expected fd=N, ifetch=on|off)\n", a);
            return -1;
        }
    }
    if (fd < 0) {
        fprintf(stderr, "tessera qemu plugin: missing fd=N argument\n");
        return -1;
    }
    if (info->system_emulation) {
        fprintf(stderr, "tessera qemu plugin: user mode only\n");
        return -1;
    }
    /* Move the pipe to a high descriptor the guest will not reuse, and keep
     * it from leaking into programs the guest executes. */
    out_fd = fcntl((int)fd, F_DUPFD_CLOEXEC, 512);
    if (out_fd < 0) {
        fprintf(stderr, "tessera qemu plugin: fd %ld: %s\n", fd, strerror(errno));
        return -1;
    }
    close((int)fd);
    pthread_atfork(NULL, NULL, in_fork_child);

    struct {
        char magic[8];
        uint32_t version;
        uint32_t record_len;
    } header = {{'T', 'E', 'S', 'S', 'Q', 'E', 'M', 'U'}, STREAM_VERSION, RECORD_LEN};
    write_all(&header, sizeof header);

    qemu_plugin_register_vcpu_init_cb(id, vcpu_init);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
