# A package file that loads.
set(WorkingDep_VERSION 1.0)
