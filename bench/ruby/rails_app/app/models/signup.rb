# frozen_string_literal: true

# A form object without a table: ActiveModel validations and serialization.
class Signup
  include ActiveModel::Model
  include ActiveModel::Serializers::JSON

  attr_accessor :name, :email, :plan

  PLANS = %w[free team enterprise].freeze

  validates :name, presence: true, length: { maximum: 40 }
  validates :email, format: { with: /\A[^@\s]+@[^@\s]+\z/ }
  validates :plan, inclusion: { in: PLANS }

  def attributes
    { "name" => name, "email" => email, "plan" => plan }
  end
end
