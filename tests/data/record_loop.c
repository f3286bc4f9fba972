/* A program with a known number of accesses to one global array, for
 * tests/test_record.py: fill() makes exactly N 8-byte stores into `data`,
 * sum() exactly N 8-byte loads from it. Built with gcc -O1 -static (no
 * vectorisation at -O1; noinline keeps the two loops apart). It prints the
 * array's address and size so the test can count the accesses inside it. */
#include <stdio.h>

#define N 50000

long data[N];

__attribute__((noinline)) static void fill(void)
{
    for (long i = 0; i < N; i++) {
        data[i] = i * 3;
    }
}

__attribute__((noinline)) static long sum(void)
{
    long s = 0;
    for (long i = 0; i < N; i++) {
        s += data[i];
    }
    return s;
}

int main(void)
{
    fill();
    __asm__ volatile("" ::: "memory");
    long s = sum();
    printf("data %p %zu\n", (void *)data, sizeof data);
    printf("sum %ld\n", s);
    return s == 3L * N * (N - 1) / 2 ? 0 : 1;
}
