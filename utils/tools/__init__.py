"""The book's own machinery: executing and benchmarking chapters, the PDF, the re-derived page, the generated
index pages, the formula-code writer (utils/__init__.py has the map)."""
