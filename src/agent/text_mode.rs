//! placeholder until the text-mode parser lands
