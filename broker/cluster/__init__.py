"""A replicated broker set (design section 12): leadership in etcd, the commit log copied byte for byte."""
