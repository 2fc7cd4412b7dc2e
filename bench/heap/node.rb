# The linked-list node of the benchmark dumps: each holds a value and the next node, so a list
# of n nodes is an n-deep dominator chain.
class Node
  def initialize(value, next_node)
    @value = value
    @next = next_node
  end
end
