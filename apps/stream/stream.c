/*
 * edgebench's memory-bandwidth kernels: STREAM's Copy, Scale, Add and Triad (McCalpin's
 * benchmark, as paper 003 ran it), written for this project so that every runtime runs the same
 * program built on the target.
 *
 *   stream ELEMENTS NTIMES
 *
 * Three arrays of ELEMENTS doubles; each kernel runs NTIMES and the first pass is discarded (it
 * pays for page faults and cold caches), as STREAM does. The report follows STREAM's layout
 * (best rate from the minimum time; average, minimum and maximum time), and the results are
 * validated the way STREAM does: the arrays' final values are replayed on scalars and the mean
 * relative error of each array must stay below 1e-13.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static double now_s(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec * 1e-6;
}

/* Smallest clock step seen, in microseconds: a kernel faster than ~20 ticks is not timed well. */
static double clock_granularity_us(void)
{
	double best = 1e9;
	for (int i = 0; i < 20; i++) {
		double t0 = now_s(), t1;
		while ((t1 = now_s()) - t0 < 1e-6)
			;
		if ((t1 - t0) * 1e6 < best)
			best = (t1 - t0) * 1e6;
	}
	return best;
}

static int mean_error_ok(const char *name, const double *x, long n, double expected, double epsilon)
{
	double sum = 0;
	for (long j = 0; j < n; j++)
		sum += fabs(x[j] - expected);
	double relative = sum / n / fabs(expected);
	if (relative > epsilon) {
		printf("Failed Validation on array %s[], AvgRelAbsErr > epsilon (%e)\n", name, epsilon);
		printf("     Expected Value: %e, AvgAbsErr: %e, AvgRelAbsErr: %e\n", expected, sum / n, relative);
		return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 3 || atol(argv[1]) < 1 || atoi(argv[2]) < 2) {
		fprintf(stderr, "usage: %s ELEMENTS NTIMES (ELEMENTS >= 1, NTIMES >= 2)\n", argv[0]);
		return 2;
	}
	const long n = atol(argv[1]);
	const int ntimes = atoi(argv[2]);
	const double scalar = 3.0;
	static const char *label[4] = {"Copy:      ", "Scale:     ", "Add:       ", "Triad:     "};
	/* Bytes each kernel moves per element: Copy and Scale read one array and write one. */
	const double bytes[4] = {2 * sizeof(double) * (double)n, 2 * sizeof(double) * (double)n,
				 3 * sizeof(double) * (double)n, 3 * sizeof(double) * (double)n};

	double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)), *c = malloc(n * sizeof(double));
	double *times = malloc(4 * (size_t)ntimes * sizeof(double));
	if (!a || !b || !c || !times) {
		fprintf(stderr, "cannot allocate 3 arrays of %ld doubles (%.1f MiB each)\n", n, n * 8.0 / 1048576);
		return 1;
	}

	printf("edgebench stream (STREAM kernels: Copy, Scale, Add, Triad)\n");
	printf("Array size = %ld (elements)\n", n);
	printf("Memory per array = %.1f MiB (= %.1f GiB).\n", n * 8.0 / 1048576, n * 8.0 / 1073741824);
	printf("Total memory required = %.1f MiB (= %.1f GiB).\n", 3 * n * 8.0 / 1048576, 3 * n * 8.0 / 1073741824);
	printf("Each kernel will be executed %d times.\n", ntimes);
	int counted = 0;
#ifdef _OPENMP
#pragma omp parallel
	{
#pragma omp master
		printf("Number of Threads requested = %i\n", omp_get_num_threads());
	}
#pragma omp parallel
#pragma omp atomic
	counted++;
#else
	counted = 1;
#endif
	printf("Number of Threads counted = %i\n", counted);

	/* First touch in parallel, so pages land near the threads that use them. */
#pragma omp parallel for
	for (long j = 0; j < n; j++) {
		a[j] = 1.0;
		b[j] = 2.0;
		c[j] = 0.0;
	}
	printf("Your clock granularity/precision appears to be %d microseconds.\n", (int)clock_granularity_us());
#pragma omp parallel for
	for (long j = 0; j < n; j++)
		a[j] = 2.0 * a[j];

	for (int k = 0; k < ntimes; k++) {
		double t;
		t = now_s();
#pragma omp parallel for
		for (long j = 0; j < n; j++)
			c[j] = a[j];
		times[0 * ntimes + k] = now_s() - t;
		t = now_s();
#pragma omp parallel for
		for (long j = 0; j < n; j++)
			b[j] = scalar * c[j];
		times[1 * ntimes + k] = now_s() - t;
		t = now_s();
#pragma omp parallel for
		for (long j = 0; j < n; j++)
			c[j] = a[j] + b[j];
		times[2 * ntimes + k] = now_s() - t;
		t = now_s();
#pragma omp parallel for
		for (long j = 0; j < n; j++)
			a[j] = b[j] + scalar * c[j];
		times[3 * ntimes + k] = now_s() - t;
	}

	printf("-------------------------------------------------------------\n");
	printf("Function    Best Rate MB/s  Avg time     Min time     Max time\n");
	for (int f = 0; f < 4; f++) {
		double sum = 0, min = FLT_MAX, max = 0;
		for (int k = 1; k < ntimes; k++) { /* the first pass is discarded */
			double t = times[f * ntimes + k];
			sum += t;
			min = t < min ? t : min;
			max = t > max ? t : max;
		}
		printf("%s%12.1f  %11.6f  %11.6f  %11.6f\n", label[f], 1.0e-06 * bytes[f] / min, sum / (ntimes - 1), min, max);
	}
	printf("-------------------------------------------------------------\n");

	/* Replay the kernels on scalars: what every element must hold now. */
	double aj = 2.0, bj = 2.0, cj = 0.0;
	for (int k = 0; k < ntimes; k++) {
		cj = aj;
		bj = scalar * cj;
		cj = aj + bj;
		aj = bj + scalar * cj;
	}
	const double epsilon = 1.e-13;
	int ok = mean_error_ok("a", a, n, aj, epsilon);
	ok &= mean_error_ok("b", b, n, bj, epsilon);
	ok &= mean_error_ok("c", c, n, cj, epsilon);
	if (ok)
		printf("Solution Validates: avg error less than %e on all three arrays\n", epsilon);
	printf("-------------------------------------------------------------\n");
	free(a);
	free(b);
	free(c);
	free(times);
	return ok ? 0 : 1;
}
