# frozen_string_literal: true

class Post < ApplicationRecord
  belongs_to :author
  has_many :comments

  scope :recent, -> { order(id: :desc) }

  def summary
    body.truncate(80)
  end
end
