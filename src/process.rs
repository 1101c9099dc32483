//! Child processes in their own process group: framed stdio lines, graceful stop, exit classification.
