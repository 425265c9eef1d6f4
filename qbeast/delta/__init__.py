"""A Delta Lake transaction log implementation; knows nothing about Qbeast (tags are opaque)."""
