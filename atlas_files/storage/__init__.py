"""Storage: the record's files (and git's) read and written safely."""
