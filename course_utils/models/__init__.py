"""The course's models and tasks, built from the core: the seq2seq models and the
reversal task, the head task, the recall task, the language model, the data they
make, and the one training loop that trains them all (``training``)."""
