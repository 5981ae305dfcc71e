"""Runs in the Spark venv: SQL statements over a Paimon catalog, answers as JSON (stdin: command, file: result)."""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from typing import Any

from pyspark.sql import Row, SparkSession


def _value(value: Any) -> Any:
    if isinstance(value, Row):
        return {k: _value(v) for k, v in value.asDict().items()}
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _session(command: dict[str, Any]) -> SparkSession:
    scratch = command["scratch"]
    builder = SparkSession.builder
    for name, warehouse in command["catalogs"].items():
        builder = builder.config(f"spark.sql.catalog.{name}", "org.apache.paimon.spark.SparkCatalog")
        builder = builder.config(f"spark.sql.catalog.{name}.warehouse", "file://" + warehouse)
    return (
        builder.master("local[1]")
        .appName("lsmlake-seed")
        .config("spark.jars", command["jar"])
        .config("spark.sql.extensions", "org.apache.paimon.spark.extensions.PaimonSparkSessionExtensions")
        .config("spark.sql.defaultCatalog", next(iter(command["catalogs"])))
        .config("spark.driver.memory", "768m")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        .config("spark.local.dir", scratch)
        .config("spark.sql.warehouse.dir", scratch + "/spark-warehouse")
        # a short run of tiny jobs: C1 only, and no whole-stage code generation (Janino) to warm up
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={scratch} -XX:TieredStopAtLevel=1")
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.adaptive.enabled", "false")
        .getOrCreate()
    )


def main() -> None:
    command = json.loads(sys.stdin.read())
    spark = _session(command)
    spark.sparkContext.setLogLevel("ERROR")
    answers = []
    try:
        for sql in command["statements"]:
            started = time.monotonic()
            frame = spark.sql(sql)
            rows = frame.collect()
            seconds = round(time.monotonic() - started, 2)
            answers.append(
                {
                    "sql": sql,
                    "columns": frame.columns,
                    "rows": [[_value(v) for v in r] for r in rows],
                    "seconds": seconds,
                }
            )
    finally:
        spark.stop()
    with open(command["result_path"], "w", encoding="utf-8") as out:
        json.dump(answers, out)


if __name__ == "__main__":
    main()
