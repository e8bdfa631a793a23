//! Hostile programs.
