/*
 * pagerank.c - pull-direction PageRank over a synthetic RMAT graph in CSR form.
 *
 * Models: a graph-analytics kernel like GAP's pr (PageRankPull).  The program
 *   1. generates an RMAT (Kronecker) graph with 2^scale vertices and
 *      degree * 2^scale directed edges (quadrant probabilities a = 0.57,
 *      b = c = 0.19, d = 0.05; vertex IDs scrambled by a fixed random
 *      permutation as in Graph500; duplicate edges and self-loops are kept),
 *   2. builds the CSR of incoming edges (32-bit offsets and 32-bit neighbour
 *      indices) plus an out-degree array, and frees the edge list,
 *   3. runs a fixed number of pull PageRank iterations with float scores:
 *        contrib[u] = score[u] / outdeg[u]                       (all u)
 *        score[v]   = (1 - d)/n + d * sum(contrib[u], u -> v)     (all v)
 *      with damping d = 0.85.
 * The kernel streams through the offsets and neighbour arrays (TLB hits) and
 * gathers contrib[] of in-neighbours from a 4 MiB array (mostly hits, some
 * misses at scale 20).
 *
 * Usage:   pagerank [scale [degree [iterations]]]
 *   scale       log2 of the number of vertices (default 20)
 *   degree      average out-degree, edges = degree * 2^scale (default 16)
 *   iterations  PageRank iterations (default 10); 0 = build the graph only,
 *               used to count the construction's memory accesses
 *
 * Footprint at the defaults: edge list 128 MiB (freed after construction),
 * CSR 68 MiB, score arrays 8 MiB.  Prints the final error and a checksum.
 * Single-threaded, deterministic.  Build: gcc -O2 -std=c99 -o pagerank pagerank.c -lm
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED UINT64_C(0x5EED0F2A6E5A1CE5)

/* splitmix64: small, fast, good enough for graph generation. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "pagerank: cannot allocate %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

static long parse_arg(int argc, char **argv, int i, long dflt)
{
    if (argc <= i)
        return dflt;
    char *end;
    long v = strtol(argv[i], &end, 0);
    if (*end != '\0' || v < 0) {
        fprintf(stderr, "pagerank: bad argument '%s'\n", argv[i]);
        exit(2);
    }
    return v;
}

/* Generate m RMAT edges over n = 2^scale vertices into src[] and dst[]. */
static void rmat_edges(unsigned scale, uint64_t m, uint32_t *src, uint32_t *dst)
{
    uint64_t n = UINT64_C(1) << scale;
    uint64_t s = SEED;
    /* Thresholds on a 32-bit uniform draw for quadrants a, a+b, a+b+c. */
    const uint32_t ta = (uint32_t)(0.57 * 4294967296.0);
    const uint32_t tab = (uint32_t)((0.57 + 0.19) * 4294967296.0);
    const uint32_t tabc = (uint32_t)((0.57 + 0.19 + 0.19) * 4294967296.0);

    /* Fixed random permutation of the vertex IDs (Fisher-Yates). */
    uint32_t *perm = xmalloc(n * sizeof *perm);
    for (uint64_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    for (uint64_t i = n - 1; i > 0; i--) {
        uint64_t j = rng_next(&s) % (i + 1);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }

    for (uint64_t e = 0; e < m; e++) {
        uint32_t u = 0, v = 0;
        for (unsigned level = 0; level < scale; level++) {
            uint32_t r = (uint32_t)(rng_next(&s) >> 32);
            u <<= 1;
            v <<= 1;
            if (r < ta) {
                /* top-left quadrant */
            } else if (r < tab) {
                v |= 1;
            } else if (r < tabc) {
                u |= 1;
            } else {
                u |= 1;
                v |= 1;
            }
        }
        src[e] = perm[u];
        dst[e] = perm[v];
    }
    free(perm);
}

int main(int argc, char **argv)
{
    long scale_arg = parse_arg(argc, argv, 1, 20);
    long degree = parse_arg(argc, argv, 2, 16);
    long iterations = parse_arg(argc, argv, 3, 10);
    if (scale_arg < 1 || scale_arg > 30 || degree < 1 ||
        (uint64_t)degree << scale_arg > UINT32_MAX) {
        fprintf(stderr, "usage: pagerank [scale(1..30) [degree [iterations]]], edges < 2^32\n");
        return 2;
    }
    unsigned scale = (unsigned)scale_arg;
    uint64_t n = UINT64_C(1) << scale;
    uint64_t m = (uint64_t)degree << scale;

    /* Construction: edge list, then in-CSR and out-degrees. */
    uint32_t *src = xmalloc(m * sizeof *src);
    uint32_t *dst = xmalloc(m * sizeof *dst);
    rmat_edges(scale, m, src, dst);

    uint32_t *outdeg = calloc(n, sizeof *outdeg);
    uint32_t *in_off = calloc(n + 1, sizeof *in_off);
    if (!outdeg || !in_off) {
        fprintf(stderr, "pagerank: out of memory\n");
        return 1;
    }
    for (uint64_t e = 0; e < m; e++) {
        outdeg[src[e]]++;
        in_off[dst[e] + 1]++;
    }
    for (uint64_t v = 0; v < n; v++)
        in_off[v + 1] += in_off[v];
    uint32_t *pos = xmalloc(n * sizeof *pos);
    memcpy(pos, in_off, n * sizeof *pos);
    uint32_t *in_nbr = xmalloc(m * sizeof *in_nbr);
    for (uint64_t e = 0; e < m; e++)
        in_nbr[pos[dst[e]]++] = src[e];
    free(pos);
    free(dst);
    free(src);

    float *score = xmalloc(n * sizeof *score);
    float *contrib = xmalloc(n * sizeof *contrib);
    const float damp = 0.85f;
    const float init = 1.0f / (float)n;
    const float base = (1.0f - damp) / (float)n;
    for (uint64_t v = 0; v < n; v++)
        score[v] = init;

    if (iterations == 0) {
        printf("pagerank: graph 2^%u vertices, %llu edges built, no iterations\n",
               scale, (unsigned long long)m);
        return 0;
    }

    /* The kernel: pull PageRank. */
    double error = 0.0;
    for (long it = 0; it < iterations; it++) {
        for (uint64_t u = 0; u < n; u++)
            contrib[u] = outdeg[u] ? score[u] / (float)outdeg[u] : 0.0f;
        error = 0.0;
        for (uint64_t v = 0; v < n; v++) {
            float sum = 0.0f;
            for (uint32_t e = in_off[v]; e < in_off[v + 1]; e++)
                sum += contrib[in_nbr[e]];
            float s = base + damp * sum;
            error += fabsf(s - score[v]);
            score[v] = s;
        }
    }

    double total = 0.0, weighted = 0.0;
    for (uint64_t v = 0; v < n; v++) {
        total += score[v];
        weighted += score[v] * (double)(v % 1024 + 1);
    }
    printf("pagerank: graph 2^%u vertices, %llu edges, %ld iterations, error %.6e, "
           "checksum %.9f %.9f\n",
           scale, (unsigned long long)m, iterations, error, total, weighted);
    free(contrib);
    free(score);
    free(in_nbr);
    free(in_off);
    free(outdeg);
    return 0;
}
