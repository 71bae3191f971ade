//! Render stage.
