/* Tiny workload for examples/traces/sort.tess: fill an array of 10 000 ints
 * with a fixed pseudo-random sequence, qsort it, and check the result.
 * See README.md in this directory for how the trace was recorded. */
#include <stdio.h>
#include <stdlib.h>

#define N 10000

static int cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(void) {
    int *v = malloc(N * sizeof *v);
    unsigned s = 12345;
    if (!v) return 1;
    for (int i = 0; i < N; i++) {
        s = s * 1103515245u + 12345u;
        v[i] = (int)(s >> 8);
    }
    qsort(v, N, sizeof *v, cmp);
    for (int i = 1; i < N; i++)
        if (v[i - 1] > v[i]) return 2;
    printf("%d %d\n", v[0], v[N - 1]);
    free(v);
    return 0;
}
