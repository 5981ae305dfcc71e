"""On-disk metadata: snapshots, manifests, index manifest, deletion vectors, commit messages, tags, the table handle."""
