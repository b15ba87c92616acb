"""khz_msgs.v1 — the khz.v1 wire messages, generated from
proto/khz_msgs/v1/*.proto by protoc --python_out at build time (state_pb2,
command_pb2, control_pb2, messages_pb2)."""
