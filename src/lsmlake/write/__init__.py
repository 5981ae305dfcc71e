"""The write path: input rows -> per-bucket sorted buffers -> level-0 files -> commit messages."""
