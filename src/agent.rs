//! Agent backends: how to launch an agent and how to read what it prints.
