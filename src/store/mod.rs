//! store (placeholder module: see DESIGN §6).
