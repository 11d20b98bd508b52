"""Timing shared by the benchmarks: best and median wall time of repeated runs."""
import statistics
import time


def best_of(fn, repeat, clock=time.perf_counter):
    """(best, median) seconds of `repeat` calls of fn(), by `clock` (wall time by default;
    time.thread_time counts only this thread's CPU time, which other programs competing for the
    cores disturb less)."""
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times), statistics.median(times)
