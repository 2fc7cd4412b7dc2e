# frozen_string_literal: true

module Shop
  # The products the shop sells, with prices in cents.
  CATALOG = {
    "tea" => 450, "coffee" => 390, "scone" => 275, "bagel" => 310,
    "juice" => 520, "muffin" => 295, "cookie" => 150, "salad" => 890
  }.freeze

  # A priced order line.
  Line = Struct.new(:product, :quantity, :unit_cents) do
    def total_cents = quantity * unit_cents
  end
end
