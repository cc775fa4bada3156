"""Alembic trees of the two service databases, shipped as package data with their alembic.ini."""
