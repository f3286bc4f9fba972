/*
 * bfs.c - top-down breadth-first search over a synthetic RMAT graph in CSR form.
 *
 * Models: a graph-traversal kernel like GAP's bfs / Graph500's BFS (top-down
 * steps only).  The program
 *   1. generates an RMAT (Kronecker) graph with 2^scale vertices and
 *      degree * 2^scale edges (quadrant probabilities a = 0.57, b = c = 0.19,
 *      d = 0.05; vertex IDs scrambled by a fixed random permutation as in
 *      Graph500; duplicates and self-loops kept) - the same generator and
 *      seed as pagerank.c,
 *   2. builds an undirected CSR (each edge stored in both directions; 32-bit
 *      offsets and 32-bit neighbour indices) and frees the edge list,
 *   3. runs a BFS from each of `sources` fixed source vertices (drawn from a
 *      fixed seed among vertices with non-zero degree): parent[] reset to -1,
 *      then a FIFO queue; for each dequeued u and each neighbour v with
 *      parent[v] < 0: parent[v] = u, enqueue v.
 * The kernel streams through the queue, reads each frontier vertex's
 * neighbour list (a random place in a 128 MiB array) and tests parent[] of
 * every neighbour (random places in a 4 MiB array).
 *
 * Usage:   bfs [scale [degree [sources]]]
 *   scale    log2 of the number of vertices (default 20)
 *   degree   average degree of the generated edge list (default 16; the
 *            undirected CSR holds 2 * degree * 2^scale entries)
 *   sources  number of BFS runs, from different sources (default 4); 0 = build
 *            the graph only, used to count the construction's memory accesses
 *
 * Footprint at the defaults: edge list 128 MiB (freed after construction),
 * CSR 132 MiB, parent and queue 8 MiB.  Prints the vertices reached from each
 * source and a checksum.  Single-threaded, deterministic.
 * Build: gcc -O2 -std=c99 -o bfs bfs.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED UINT64_C(0x5EED0F2A6E5A1CE5)
#define SOURCE_SEED UINT64_C(0x00000000B0F5EED5)

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
        fprintf(stderr, "bfs: cannot allocate %zu bytes\n", bytes);
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
        fprintf(stderr, "bfs: bad argument '%s'\n", argv[i]);
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
    long sources = parse_arg(argc, argv, 3, 4);
    if (scale_arg < 1 || scale_arg > 30 || degree < 1 ||
        ((uint64_t)degree << scale_arg) * 2 > UINT32_MAX) {
        fprintf(stderr, "usage: bfs [scale(1..30) [degree [sources]]], 2 * edges < 2^32\n");
        return 2;
    }
    unsigned scale = (unsigned)scale_arg;
    uint64_t n = UINT64_C(1) << scale;
    uint64_t m = (uint64_t)degree << scale;

    /* Construction: edge list, then the undirected CSR. */
    uint32_t *src = xmalloc(m * sizeof *src);
    uint32_t *dst = xmalloc(m * sizeof *dst);
    rmat_edges(scale, m, src, dst);

    uint32_t *off = calloc(n + 1, sizeof *off);
    if (!off) {
        fprintf(stderr, "bfs: out of memory\n");
        return 1;
    }
    for (uint64_t e = 0; e < m; e++) {
        off[src[e] + 1]++;
        off[dst[e] + 1]++;
    }
    for (uint64_t v = 0; v < n; v++)
        off[v + 1] += off[v];
    uint32_t *pos = xmalloc(n * sizeof *pos);
    memcpy(pos, off, n * sizeof *pos);
    uint32_t *nbr = xmalloc(2 * m * sizeof *nbr);
    for (uint64_t e = 0; e < m; e++) {
        uint32_t u = src[e], v = dst[e];
        nbr[pos[u]++] = v;
        nbr[pos[v]++] = u;
    }
    free(pos);
    free(dst);
    free(src);

    int32_t *parent = xmalloc(n * sizeof *parent);
    uint32_t *queue = xmalloc(n * sizeof *queue);

    if (sources == 0) {
        printf("bfs: graph 2^%u vertices, %llu undirected edges built, no search\n",
               scale, (unsigned long long)m);
        return 0;
    }

    /* The kernel: top-down BFS from each source. */
    uint64_t s = SOURCE_SEED;
    uint64_t checksum = 0;
    for (long k = 0; k < sources; k++) {
        uint32_t source;
        do
            source = (uint32_t)(rng_next(&s) & (n - 1));
        while (off[source + 1] == off[source]);

        for (uint64_t v = 0; v < n; v++)
            parent[v] = -1;
        parent[source] = (int32_t)source;
        queue[0] = source;
        uint64_t head = 0, tail = 1;
        while (head < tail) {
            uint32_t u = queue[head++];
            for (uint32_t e = off[u]; e < off[u + 1]; e++) {
                uint32_t v = nbr[e];
                if (parent[v] < 0) {
                    parent[v] = (int32_t)u;
                    queue[tail++] = v;
                }
            }
        }

        uint64_t sum = 0;
        for (uint64_t v = 0; v < n; v++)
            if (parent[v] >= 0)
                sum += (uint64_t)parent[v] * (v | 1);
        printf("bfs: source %u reached %llu vertices\n", source, (unsigned long long)tail);
        checksum = checksum * 31 + sum + tail;
    }
    printf("bfs: graph 2^%u vertices, %llu undirected edges, %ld sources, checksum %016llx\n",
           scale, (unsigned long long)m, sources, (unsigned long long)checksum);
    free(queue);
    free(parent);
    free(nbr);
    free(off);
    return 0;
}
