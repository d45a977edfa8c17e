//! stream (placeholder module: see DESIGN §6).
