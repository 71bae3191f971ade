//! Ingest stage.
