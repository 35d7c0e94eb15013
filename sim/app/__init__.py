"""The application: command line, scenario files, HDF5 results and figures."""
