"""memconfig inside agent frameworks: one module per framework, each needing its own extra.

Nothing is imported here: ``memconfig.integrations.langchain`` needs
``memconfig[langchain]``, ``memconfig.integrations.deepagents`` needs
``memconfig[deepagents]``, and importing one without its extra raises an
``ImportError`` saying what to install.
"""
