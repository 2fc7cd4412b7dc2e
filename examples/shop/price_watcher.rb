# frozen_string_literal: true

module Shop
  # Tells a customer when the price of a quoted cart changes.
  class PriceWatcher
    attr_reader :cart_id, :quoted_cents

    def initialize(cart_id, quoted_cents)
      @cart_id = cart_id
      @quoted_cents = quoted_cents
    end

    def call(new_prices)
      new_prices[cart_id]
    end
  end
end
