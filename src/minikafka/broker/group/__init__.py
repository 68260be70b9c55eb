"""The group coordinator: classic consumer groups kept in __consumer_offsets."""
