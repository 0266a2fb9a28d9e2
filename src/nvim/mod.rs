//! The only module that calls the Neovim API.
