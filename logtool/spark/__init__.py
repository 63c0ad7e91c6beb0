"""Fleet audit on Spark: the driver, the per-partition task, replica divergence (`logtool/spark_job.py` runs
it under spark-submit).

`session` imports without PySpark, so that its absence is a one-line message; the driver, the tables
(`rows`), `divergence`, `summary` and `progress` need PySpark.
"""
