/*
 * xsbench.c - simplified event-based macroscopic cross-section lookups
 * (the algorithm of the XSBench proxy application, unionized-grid method).
 *
 * Models: the dominant kernel of Monte Carlo neutron transport.  Data:
 *   - per nuclide (isotope) a sorted energy grid of n_gridpoints points, each
 *     point holding its energy and 5 microscopic cross sections (total,
 *     elastic, absorption, fission, nu-fission): 48 bytes a point;
 *   - the unionized energy grid: all n_isotopes * n_gridpoints energies,
 *     sorted; for each of its points an index row of n_isotopes 32-bit
 *     entries giving, per nuclide, the nuclide grid interval that contains
 *     that energy;
 *   - 12 materials (a fixed composition table: fuel with n_isotopes/2
 *     nuclides, then 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9 nuclides) picked
 *     with fixed probabilities; member nuclides and their concentrations
 *     come from a fixed seed.
 * Each lookup draws a random energy and material, binary-searches the
 * unionized grid once, then for every nuclide of the material reads its
 * index entry and the two bracketing grid points and interpolates the 5
 * cross sections, accumulating concentration-weighted macroscopic values.
 * Nearly every nuclide visit lands on a different page of the 209 MiB index
 * grid and of the 37 MiB nuclide grids: many TLB misses.
 *
 * Usage:   xsbench [n_isotopes [n_gridpoints [lookups]]]
 *   n_isotopes    nuclides (default 68, XSBench's "small" problem)
 *   n_gridpoints  energy points per nuclide (default 11303)
 *   lookups       cross-section lookups (default 1000000); 0 = build the data
 *                 only, used to count the initialisation's memory accesses
 *
 * Footprint at the defaults: nuclide grids 37 MiB, unionized energies 6 MiB,
 * index grid 209 MiB.  Prints a checksum of the lookups' results.
 * Single-threaded, deterministic.  Build: gcc -O2 -std=c99 -o xsbench xsbench.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define GRID_SEED UINT64_C(0x000000000000C5C5)
#define LOOKUP_SEED UINT64_C(0x00000000000E7E27)
#define N_MATERIALS 12
#define N_XS 5

typedef struct {
    double energy;
    double xs[N_XS]; /* total, elastic, absorption, fission, nu-fission */
} GridPoint;

/* Nuclides per material (material 0, the fuel, gets n_isotopes / 2). */
static const int material_size[N_MATERIALS] = {0, 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9};
/* Probability that a lookup happens in each material (sums to 1). */
static const double material_prob[N_MATERIALS] = {
    0.140, 0.052, 0.275, 0.134, 0.154, 0.064, 0.066, 0.055, 0.008, 0.015, 0.025, 0.012,
};

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform double in [0, 1). */
static double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "xsbench: cannot allocate %zu bytes\n", bytes);
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
        fprintf(stderr, "xsbench: bad argument '%s'\n", argv[i]);
        exit(2);
    }
    return v;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long n_iso = parse_arg(argc, argv, 1, 68);
    long n_gp = parse_arg(argc, argv, 2, 11303);
    long lookups = parse_arg(argc, argv, 3, 1000000);
    if (n_iso < 2 || n_gp < 2 || (uint64_t)n_iso * (uint64_t)n_gp > INT32_MAX) {
        fprintf(stderr, "usage: xsbench [n_isotopes(>=2) [n_gridpoints(>=2) [lookups]]]\n");
        return 2;
    }
    uint64_t s = GRID_SEED;

    /* Nuclide grids: energies stratified in [0, 1) so each grid is sorted
     * by construction, random cross sections. */
    size_t n_points = (size_t)n_iso * (size_t)n_gp;
    GridPoint *grid = xmalloc(n_points * sizeof *grid);
    for (long i = 0; i < n_iso; i++) {
        GridPoint *g = grid + (size_t)i * n_gp;
        for (long j = 0; j < n_gp; j++) {
            g[j].energy = ((double)j + rng_unit(&s)) / (double)n_gp;
            for (int t = 0; t < N_XS; t++)
                g[j].xs[t] = rng_unit(&s);
        }
    }

    /* Unionized energy grid: every nuclide energy, sorted. */
    size_t n_union = n_points;
    double *union_energy = xmalloc(n_union * sizeof *union_energy);
    for (size_t k = 0; k < n_points; k++)
        union_energy[k] = grid[k].energy;
    qsort(union_energy, n_union, sizeof *union_energy, compare_double);

    /* Index grid: for union point u and nuclide i, the largest j <= n_gp - 2
     * with grid[i][j].energy <= union_energy[u] (0 if none). */
    int32_t *index_grid = xmalloc(n_union * (size_t)n_iso * sizeof *index_grid);
    int32_t *cursor = calloc((size_t)n_iso, sizeof *cursor);
    if (!cursor) {
        fprintf(stderr, "xsbench: out of memory\n");
        return 1;
    }
    for (size_t u = 0; u < n_union; u++) {
        double e = union_energy[u];
        int32_t *row = index_grid + u * (size_t)n_iso;
        for (long i = 0; i < n_iso; i++) {
            const GridPoint *g = grid + (size_t)i * n_gp;
            int32_t j = cursor[i];
            while (j < n_gp - 2 && g[j + 1].energy <= e)
                j++;
            cursor[i] = j;
            row[i] = j;
        }
    }
    free(cursor);

    /* Materials: a fixed composition table. */
    int mat_start[N_MATERIALS + 1];
    mat_start[0] = 0;
    for (int m = 0; m < N_MATERIALS; m++) {
        long size = m == 0 ? n_iso / 2 : material_size[m];
        if (size > n_iso)
            size = n_iso;
        if (size < 1)
            size = 1;
        mat_start[m + 1] = mat_start[m] + (int)size;
    }
    int *mat_nuclide = xmalloc((size_t)mat_start[N_MATERIALS] * sizeof *mat_nuclide);
    double *mat_conc = xmalloc((size_t)mat_start[N_MATERIALS] * sizeof *mat_conc);
    int *pool = xmalloc((size_t)n_iso * sizeof *pool);
    for (int m = 0; m < N_MATERIALS; m++) {
        int size = mat_start[m + 1] - mat_start[m];
        for (long i = 0; i < n_iso; i++)
            pool[i] = (int)i;
        for (int k = 0; k < size; k++) {
            /* Fuel holds nuclides 0..size-1; the others a random subset. */
            long pick = m == 0 ? k : k + (long)(rng_next(&s) % (uint64_t)(n_iso - k));
            int t = pool[k];
            pool[k] = pool[pick];
            pool[pick] = t;
            mat_nuclide[mat_start[m] + k] = pool[k];
            mat_conc[mat_start[m] + k] = 0.01 + rng_unit(&s);
        }
    }
    free(pool);
    double mat_cdf[N_MATERIALS];
    double acc = 0.0;
    for (int m = 0; m < N_MATERIALS; m++) {
        acc += material_prob[m];
        mat_cdf[m] = acc;
    }
    mat_cdf[N_MATERIALS - 1] = 1.0;

    if (lookups == 0) {
        printf("xsbench: %ld nuclides x %ld points built, no lookups\n", n_iso, n_gp);
        return 0;
    }

    /* The kernel: event-based lookups. */
    uint64_t ls = LOOKUP_SEED;
    double sum[N_XS] = {0};
    uint64_t hash = 0;
    for (long l = 0; l < lookups; l++) {
        double e = rng_unit(&ls);
        double pm = rng_unit(&ls);
        int mat = 0;
        while (mat < N_MATERIALS - 1 && pm >= mat_cdf[mat])
            mat++;

        /* Largest u with union_energy[u] <= e (0 if e is below the grid). */
        size_t lo = 0, hi = n_union;
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (union_energy[mid] <= e)
                lo = mid;
            else
                hi = mid;
        }
        const int32_t *row = index_grid + lo * (size_t)n_iso;

        double macro[N_XS] = {0};
        for (int k = mat_start[mat]; k < mat_start[mat + 1]; k++) {
            int nuc = mat_nuclide[k];
            double conc = mat_conc[k];
            const GridPoint *low = grid + (size_t)nuc * n_gp + row[nuc];
            const GridPoint *high = low + 1;
            double f = (high->energy - e) / (high->energy - low->energy);
            for (int t = 0; t < N_XS; t++)
                macro[t] += conc * (high->xs[t] - f * (high->xs[t] - low->xs[t]));
        }

        int best = 0;
        for (int t = 0; t < N_XS; t++) {
            sum[t] += macro[t];
            if (macro[t] > macro[best])
                best = t;
        }
        hash = hash * 1099511628211u + (uint64_t)(best + 1) * (uint64_t)(mat + 1);
    }

    printf("xsbench: %ld nuclides x %ld points, %ld lookups, checksum %016llx "
           "%.6f %.6f %.6f %.6f %.6f\n",
           n_iso, n_gp, lookups, (unsigned long long)hash,
           sum[0], sum[1], sum[2], sum[3], sum[4]);
    free(mat_conc);
    free(mat_nuclide);
    free(index_grid);
    free(union_energy);
    free(grid);
    return 0;
}
