//! One agent session: a process, an agent backend and a context meter, ending in a SessionOutcome.
