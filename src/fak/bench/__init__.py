"""Benchmark code that ships with fak (tier T4): the fleet workload over the in-kernel engine
(``fleet``, ``fleet_report``) and the hook/decide benchmark (``decide``), run by ``fak bench``
and ``benchmarks/``. Nothing in a product package imports it."""
