"""Split readers: raw files with deletion vectors, or merge-on-read section by section."""
