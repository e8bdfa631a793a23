//! Hostile predictions.
