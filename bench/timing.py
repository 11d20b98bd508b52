"""Timing shared by the benchmarks: best and median wall time of repeated runs."""
import statistics
import time


def best_of(fn, repeat):
    """(best, median) seconds of `repeat` calls of fn()."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)
