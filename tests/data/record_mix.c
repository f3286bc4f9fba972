/* A deterministic program for comparing the recording backends
 * (tests/test_record.py): a global table and a heap array (large enough that
 * malloc maps it), filled, permuted and randomly updated with a fixed LCG.
 * The hot loops call no libc function, so the C library's CPU-dependent
 * string routines (Valgrind and QEMU emulate different CPUs) only touch the
 * short start-up. It prints each structure's address and size. */
#include <stdio.h>
#include <stdlib.h>

#define N 16384
#define UPDATES 150000

static long table[N];

static unsigned lcg(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

int main(void)
{
    long *heap = malloc(N * sizeof(long));
    if (heap == NULL) {
        return 2;
    }
    unsigned s = 12345;
    for (long i = 0; i < N; i++) {
        table[i] = lcg(&s);
    }
    for (long i = 0; i < N; i++) {
        heap[i] = table[(i * 7919) % N];
    }
    for (long k = 0; k < UPDATES; k++) {
        unsigned idx = lcg(&s) % N;
        heap[idx] += table[(idx * 13) % N];
    }
    long sum = 0;
    for (long i = 0; i < N; i++) {
        sum ^= heap[i];
    }
    printf("table %p %zu\n", (void *)table, sizeof table);
    printf("heap %p %zu\n", (void *)heap, (size_t)N * sizeof(long));
    printf("sum %ld\n", sum);
    free(heap);
    return 0;
}
