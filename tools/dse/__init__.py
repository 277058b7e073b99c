"""Design-space exploration behind `npu-dse` (`tools/npu_dse.py`): sweep specs, the
evaluation of one point, the executors (local processes, Ray, Dask), the sweeps
themselves, and what they write."""
