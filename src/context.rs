//! The context meter: how full the agent's context window is, from its own usage numbers.
