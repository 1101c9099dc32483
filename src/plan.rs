//! Markdown plans: the master plan, its phase files, and the audit.
