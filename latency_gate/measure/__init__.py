"""Measuring: I/O only. The engine, the transport with its kernel stamps, the floor -> samples."""
