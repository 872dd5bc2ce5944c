"""The okoco version, on the ground floor so that every layer (the file formats) can read it."""

__version__ = "0.1.0"
