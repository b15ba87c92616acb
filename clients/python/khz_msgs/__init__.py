"""khz_msgs — the khz wire messages (protobuf package khz.v1), generated from
proto/khz_msgs/v1/*.proto by protoc --python_out. A program that generates
them itself from the .proto files gets the same module names (khz_msgs.v1.*)
and the same descriptors; the client package `khz` imports them from here."""
