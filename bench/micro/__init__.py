"""Micro-benchmarks: the cost of one piece of work, measured in isolation.

Theory of operation
-------------------
* Layers below the broker are measured in this process, through their public API: the
  ``wire`` codecs (``codec``), ``log`` storage (``log_storage``, ``state_files``), the log
  cleaner and its worker process (``cleaner``), and the kernel's ``sendfile`` against a copy
  (``sendfile``).  Figures are thread CPU time or wall time of many repetitions.
* The broker's request paths (``metadata``, ``produce_path``, ``wide_read``) are measured on
  a real ``kbroker serve`` process driven over TCP by the project's one protocol client,
  ``kbroker.client``: the figure is the broker's event-loop thread's CPU time
  (/proc/<pid>/task/<pid>/stat) per request, over many requests.  They import nothing of
  the broker's state, handlers or connections, so they survive any refactor of ``kbroker/``
  and measure any checkout (``--tree``) the same way.
* Results are printed; the ones that decided something are in ``bench/results/*.md``.
"""
