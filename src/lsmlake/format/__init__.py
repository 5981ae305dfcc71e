"""Data files: Parquet/ORC/Avro read and write, column codecs, column statistics."""
