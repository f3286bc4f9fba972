/*
 * gups.c - HPCC RandomAccess-style GUPS (giga-updates per second) kernel.
 *
 * Models: a table of 2^k 64-bit words, initialised with table[i] = i, then
 * N read-modify-write updates  table[r & (2^k - 1)] ^= r  where r follows
 * HPCC's 64-bit LFSR-style sequence  r = (r << 1) ^ (r < 0 ? POLY : 0),
 * POLY = 7 (r viewed as signed).  With the default 1 GiB table nearly every
 * update touches a different 4 KiB page, so the kernel is dominated by TLB
 * misses.  Each update is one load and one store of the same word.
 *
 * Usage:   gups [log2_words [updates [seed]]]
 *   log2_words  table size as a power of two of 8-byte words (default 27,
 *               i.e. 2^27 words = 1 GiB)
 *   updates     number of updates (default 2^26 = half the table; HPCC
 *               itself uses 4 x the table).  0 = initialise only (no update
 *               and no checksum pass), used to count the initialisation's
 *               memory accesses
 *   seed        starting value of the sequence (default 0x9E3779B97F4A7C15;
 *               any non-zero value; HPCC's first stream starts at 1, whose
 *               first few thousand values are still sparse bit patterns)
 *
 * Prints the number of updates and an XOR/sum checksum of the final table.
 * Single-threaded, deterministic.  Build: gcc -O2 -std=c99 -o gups gups.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define POLY UINT64_C(0x0000000000000007)

static uint64_t next_random(uint64_t x)
{
    /* Shift left; if the top bit (the sign bit) was set, fold in POLY. */
    return (x << 1) ^ (((int64_t)x < 0) ? POLY : 0);
}

static unsigned long long parse_arg(int argc, char **argv, int i, unsigned long long dflt)
{
    if (argc <= i)
        return dflt;
    char *end;
    unsigned long long v = strtoull(argv[i], &end, 0);
    if (*end != '\0') {
        fprintf(stderr, "gups: bad argument '%s'\n", argv[i]);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    unsigned log2_words = (unsigned)parse_arg(argc, argv, 1, 27);
    uint64_t updates = parse_arg(argc, argv, 2, UINT64_C(1) << 26);
    uint64_t seed = parse_arg(argc, argv, 3, UINT64_C(0x9E3779B97F4A7C15));
    if (log2_words < 1 || log2_words > 40 || seed == 0) {
        fprintf(stderr, "usage: gups [log2_words(1..40) [updates [seed(!=0)]]]\n");
        return 2;
    }

    uint64_t words = UINT64_C(1) << log2_words;
    uint64_t mask = words - 1;
    uint64_t *table = malloc(words * sizeof *table);
    if (!table) {
        fprintf(stderr, "gups: cannot allocate %llu bytes\n",
                (unsigned long long)(words * sizeof *table));
        return 1;
    }

    /* Phase 1: initialisation (2^k stores, sequential). */
    for (uint64_t i = 0; i < words; i++)
        table[i] = i;

    if (updates == 0) {
        printf("gups: table 2^%u words initialised, no updates\n", log2_words);
        return 0;
    }

    /* Phase 2: the kernel, one RMW per update. */
    uint64_t r = seed;
    for (uint64_t i = 0; i < updates; i++) {
        r = next_random(r);
        table[r & mask] ^= r;
    }

    /* Checksum so that no update can be optimised away. */
    uint64_t x = 0, s = 0;
    for (uint64_t i = 0; i < words; i++) {
        x ^= table[i];
        s += table[i] * (2 * i + 1);
    }
    printf("gups: table 2^%u words (%llu MiB), %llu updates, checksum %016llx %016llx\n",
           log2_words, (unsigned long long)(words * 8 >> 20),
           (unsigned long long)updates, (unsigned long long)x, (unsigned long long)s);
    free(table);
    return 0;
}
