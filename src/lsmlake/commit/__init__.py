"""The committer, the only writer of manifests and snapshots, and the one publish recipe."""
