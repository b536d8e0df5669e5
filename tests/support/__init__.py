"""What the tests of every part share: the CLI run as a user runs it, test servers, folder trees, pipeline builders."""
