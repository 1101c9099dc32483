//! Pure restart policy: throttling, crash backoff, restart intensity, restart budgets.
